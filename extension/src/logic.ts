/**
 * What live validation decides, apart from JupyterLab: which cells are lackpy, what the
 * kernel said it knows, and where a problem lies in a cell's text. Pure functions, tested
 * with Node's own test runner (test/logic.test.ts).
 */

/** A problem as the server extension answers it: 1-based, end excluded. */
export interface IProblem {
  line: number;
  col: number;
  end_line: number;
  end_col: number;
  message: string;
}

/** How a cell is checked: as a lackpy notebook's cell, or a Python notebook's `%%lackpy`. */
export type Language = 'lackpy' | 'python';

/** The names a session knows, as the kernel last said (`names` null: not said yet). */
export interface ISessionNames {
  names: string[] | null;
  tools: string[];
}

export const UNKNOWN_NAMES: ISessionNames = { names: null, tools: [] };

const PROGRAM_CELL = /^%%(lackpy|step|validate)(\s|$)/;

/**
 * How to check a cell of a notebook in `notebookLanguage`: every cell of a lackpy
 * notebook; in a Python notebook only a cell whose body is lackpy (`%%lackpy`, `%%step`,
 * `%%validate`); else null.
 */
export function languageOf(
  notebookLanguage: string,
  source: string
): Language | null {
  if (notebookLanguage === 'lackpy') {
    return 'lackpy';
  }
  if (notebookLanguage === 'python' && PROGRAM_CELL.test(source)) {
    return 'python';
  }
  return null;
}

function stringList(value: unknown): string[] | null {
  return Array.isArray(value) && value.every(item => typeof item === 'string')
    ? (value as string[])
    : null;
}

/**
 * The names an execute_reply's metadata says the session knows (`metadata.lackpy`), or
 * null when it says none (another kernel, or a kit that cannot be resolved).
 */
export function namesFromReply(metadata: unknown): ISessionNames | null {
  const said = (metadata as { lackpy?: { names?: unknown; tools?: unknown } })
    ?.lackpy;
  const names = stringList(said?.names);
  const tools = stringList(said?.tools);
  return names && tools ? { names, tools } : null;
}

/** The session's kit as the kernel last said it: its label, grade and tools. */
export interface IKitInfo {
  kit: string;
  grade: { w: number; d: number };
  tools: string[];
}

/** The kit an execute_reply's metadata names (`metadata.lackpy`), or null. */
export function kitFromReply(metadata: unknown): IKitInfo | null {
  const said = (metadata as { lackpy?: { kit?: unknown; grade?: unknown; tools?: unknown } })
    ?.lackpy;
  const grade = said?.grade as { w?: unknown; d?: unknown } | undefined;
  const tools = stringList(said?.tools);
  if (typeof said?.kit !== 'string' || !tools || typeof grade?.w !== 'number' ||
      typeof grade?.d !== 'number') {
    return null;
  }
  return { kit: said.kit, grade: { w: grade.w, d: grade.d }, tools };
}

/** The grade's world coupling in the words `[delegate] auto_run` takes. */
export const GRADE_WORDS = ['pure', 'read', 'exec', 'write'];

const KIT_SHOWN = 32; // characters of a kit's label in the status bar

/** What the status bar shows for a kit, and its tooltip. */
export function kitStatus(info: IKitInfo): { text: string; title: string } {
  const word = GRADE_WORDS[info.grade.w] ?? `w=${info.grade.w}`;
  const label =
    info.kit.length > KIT_SHOWN ? info.kit.slice(0, KIT_SHOWN - 1) + '\u2026' : info.kit;
  const count = info.tools.length;
  return {
    text: `lackpy kit: ${label} \u00b7 ${word}`,
    title:
      `kit ${info.kit}, grade w=${info.grade.w} (${word}) d=${info.grade.d}; ` +
      `${count} tool${count === 1 ? '' : 's'}: ${info.tools.join(', ') || 'none'}. ` +
      '%kit NAME changes it'
  };
}

/** The offset in `text` of 1-based (line, col), kept within the text and its line. */
function offsetOf(lines: string[], line: number, col: number): number {
  const index = Math.min(Math.max(line, 1), lines.length) - 1;
  let offset = 0;
  for (let i = 0; i < index; i++) {
    offset += lines[i].length + 1;
  }
  return offset + Math.min(Math.max(col, 1), lines[index].length + 1) - 1;
}

/** Where `problem` lies in `text`: from and to offsets, `to` never before `from`. */
export function rangeOf(
  text: string,
  problem: IProblem
): { from: number; to: number } {
  const lines = text.split('\n');
  const from = offsetOf(lines, problem.line, problem.col);
  const to = offsetOf(lines, problem.end_line, problem.end_col);
  return { from, to: Math.max(from, to) };
}

/** The cell that runs `%delegate` for `intent`, on one line (a newline would end the magic). */
export function delegateCell(intent: string): string {
  return `%delegate ${intent.replace(/\s+/g, ' ').trim()}`;
}

const LOADS_LACKPY = /^%load_ext\s+lackpy_kernel(\.extension)?\s*$/m;

/**
 * Whether `%delegate` works in a notebook in `notebookLanguage` whose cells are `sources`:
 * in every lackpy notebook, and in a Python notebook that loads lackpy's IPython extension.
 */
export function delegateOffered(notebookLanguage: string, sources: string[]): boolean {
  if (notebookLanguage === 'lackpy') {
    return true;
  }
  return notebookLanguage === 'python' && sources.some(source => LOADS_LACKPY.test(source));
}
