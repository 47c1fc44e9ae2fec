/**
 * A program's file change as the kernel sends it for approval, and how it reads: what it
 * asks, what runs code, what was not shown, and what each of the dialog's buttons answers.
 */

/**
 * One file's change (`FileChange.to_shown_frame()` on the kernel's side). Every text is
 * visible already (the kernel escapes what a person could not see) but the program's own:
 * text to show, never markup. `unseen` says what of it was not shown ("" when all was);
 * `more` how many lines of its whole rendering the kernel holds then, which it shows when
 * asked for `all` (a kernel before `more` sent them here as `full`); `runs_code` why the
 * file runs code ("" when it does not); `executable` whether it is (and stays) executable.
 * A kernel older than these fields leaves them out.
 */
export interface IFileChange {
  path: string;
  status: string;
  added: number;
  removed: number;
  lines: string[];
  omitted: number;
  note: string;
  content?: string;
  unseen?: string;
  more?: number;
  full?: string[] | string;
  rest?: string;
  runs_code?: string;
  executable?: boolean;
}

/**
 * A call of a tool graded write that runs in the kernel (`ToolCall.to_frame()`), asked for
 * before it runs: the tool's name and its arguments as the kernel wrote them (bounded,
 * visible, but the program's own: text to show, never markup); `unseen` says what of them
 * was cut ("" when nothing was), `more` how many characters of them all the kernel holds then
 * (shown when asked for `all`; a kernel before `more` sent them here as `full`), `digest`
 * covers every argument.
 */
export interface IToolCall {
  name: string;
  arguments: string;
  unseen?: string;
  more?: number;
  full?: string;
  digest?: string;
}

/**
 * A change (`Change.to_frame()`): its files in the order the program wrote them; or, with
 * `call` (and no files), the call of a tool the program asks to make.
 */
export interface IChange {
  files: IFileChange[];
  call?: IToolCall;
}

/**
 * How the stdin question the kernel asks after showing `change` begins (`Change.question()`
 * on its side; what runs code, what was not shown and the answers follow): for a call,
 * `Call NAME?`.
 */
export function questionOf(change: IChange): string {
  const call = callOf(change);
  return call ? `Call ${call.name}?` : 'Apply these changes?';
}

/** `N files changed: +A -R`, as the kernel's text says it. */
export function changeSummary(change: IChange): string {
  const count = change.files.length;
  const added = change.files.reduce((sum, file) => sum + file.added, 0);
  const removed = change.files.reduce((sum, file) => sum + file.removed, 0);
  return `${count} file${count === 1 ? '' : 's'} changed: +${added} -${removed}`;
}

/** The call a call-only change asks to make; null for a change of files (or a call of the wrong shape). */
export function callOf(change: IChange): IToolCall | null {
  const call = change.call;
  if (typeof call !== 'object' || call === null) {
    return null;
  }
  return typeof call.name === 'string' && typeof call.arguments === 'string' ? call : null;
}

/** `Call NAME(ARGS)?`: what the dialog asks about a call. */
export function callQuestion(call: IToolCall): string {
  return `Call ${call.name}(${call.arguments})?`;
}

/** Why a call is asked for, as the kernel's text says it. */
export function callReason(call: IToolCall): string {
  return (
    `${call.name} acts beyond the workspace's files (a tool graded write that runs in the ` +
    'kernel), so it runs only if you allow this call'
  );
}

/** `+3 -1`: the sides that changed. */
export function fileCounts(file: IFileChange): string {
  return [file.added ? `+${file.added}` : '', file.removed ? `-${file.removed}` : '']
    .filter(Boolean)
    .join(' ');
}

/** What a line of a unified diff is: added, removed, a hunk's header, or context. */
export function lineKind(line: string): 'added' | 'removed' | 'hunk' | 'context' {
  if (line.startsWith('@@')) {
    return 'hunk';
  }
  return line.startsWith('+') ? 'added' : line.startsWith('-') ? 'removed' : 'context';
}

/** A text field of the frame, or "" (a kernel older than it, or the wrong type). */
function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** What of the change was not shown: `PATH: WHAT` a file, or what of a call's arguments. */
export function unseenOf(change: IChange): string[] {
  const call = callOf(change);
  if (call) {
    return text(call.unseen) ? [text(call.unseen)] : [];
  }
  return change.files.filter(file => text(file.unseen)).map(file => `${file.path}: ${file.unseen}`);
}

/** Whether everything the change does was shown (so Apply may answer yes). */
export function isComplete(change: IChange): boolean {
  return unseenOf(change).length === 0;
}

/** A count of the frame (`more`), or 0 (a kernel older than it, or the wrong type). */
function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

/** Whether `full` (as a kernel before `more` sent it) holds anything. */
function held(full: unknown): boolean {
  return (Array.isArray(full) || typeof full === 'string') && full.length > 0;
}

/** Whether the kernel holds more of the change to show (`all`): what was cut, kept in full. */
export function hasMore(change: IChange): boolean {
  const call = callOf(change);
  if (call) {
    return text(call.unseen) !== '' && (count(call.more) > 0 || held(call.full));
  }
  return change.files.some(
    file => text(file.unseen) !== '' && (count(file.more) > 0 || held(file.full))
  );
}

/** The files that run code: `PATH: WHY` each. */
export function runsCodeOf(change: IChange): string[] {
  return callOf(change)
    ? []
    : change.files.filter(file => text(file.runs_code)).map(file => `${file.path}: ${file.runs_code}`);
}

/**
 * What the kernel's question adds after how it begins (`Change.warnings()` on its side): the
 * files that run code, then what was not shown.
 */
export function changeWarnings(change: IChange): string[] {
  const said: string[] = [];
  const code = runsCodeOf(change);
  if (code.length) {
    said.push(`${code.length} file${code.length === 1 ? ' runs' : 's run'} code: ${code.join('; ')}.`);
  }
  const unseen = unseenOf(change);
  if (unseen.length) {
    said.push(`Not shown: ${unseen.join('; ')}.`);
  }
  return said;
}

/** A file's marks beside its counts: executable, and why it runs code. */
export function fileMarks(file: IFileChange): string[] {
  return [
    file.executable === true ? 'executable (mode kept)' : '',
    text(file.runs_code) ? `RUNS CODE: ${file.runs_code}` : ''
  ].filter(Boolean);
}

/** What the dialog's buttons do: apply what was shown, show all, apply unseen, discard. */
export type Action = 'apply' | 'all' | 'unseen' | 'discard';

/**
 * Which answers a prompt of the kernel takes: `[y/N]` (the change was shown whole),
 * `[all/unseen/N]` (something was cut), or neither (a question this dialog does not know).
 */
export function answersOf(prompt: string): 'whole' | 'cut' | 'unknown' {
  const end = prompt.trimEnd();
  return end.endsWith('[y/N]') ? 'whole' : end.endsWith('[all/unseen/N]') ? 'cut' : 'unknown';
}

/**
 * What `action` types in answer to `prompt`, or null when that prompt does not take it: `y`
 * only where everything was shown (a bare yes never applies what was not), `all` and
 * `unseen` only where something was cut, `n` to any.
 */
export function replyFor(action: Action, prompt: string): string | null {
  const answers = answersOf(prompt);
  switch (action) {
    case 'apply':
      return answers === 'whole' ? 'y' : null;
    case 'all':
      return answers === 'cut' ? 'all' : null;
    case 'unseen':
      return answers === 'cut' ? 'unseen' : null;
    case 'discard':
      return 'n';
  }
}

/**
 * The buttons a dialog of `change` offers: Apply and Discard for a change shown whole; for
 * one with something cut, Show all (when the kernel holds more to show), Apply unseen and
 * Discard, with Apply there but never enabled.
 */
export function actionsOf(change: IChange): Action[] {
  if (isComplete(change)) {
    return ['apply', 'discard'];
  }
  return [...(hasMore(change) ? (['all'] as Action[]) : []), 'apply', 'unseen', 'discard'];
}

/**
 * What follows a dialog in its output area, in order: another change's dialog, a stdin
 * box (`answered` once its answer was sent: JupyterLab keeps it a moment), or any other
 * output with its text (a stream; the record of an answer, which starts with its prompt).
 */
export type Following =
  | { kind: 'dialog' }
  | { kind: 'stdin'; prompt: string; answered: boolean }
  | { kind: 'output'; text: string };

/**
 * Which question a dialog asking `asks` answers, from what follows it: the first input
 * request after its display, only while no other change was shown before it and only if
 * it begins with `asks` (`asked`, its index); `over` when its question was answered, or
 * will never come (another change was shown first, or the next question is another);
 * else `waiting`.
 */
export type Binding =
  | { state: 'waiting' }
  | { state: 'asked'; index: number }
  | { state: 'over'; why: string };

export function bindingOf(following: Following[], asks: string): Binding {
  for (const [index, item] of following.entries()) {
    if (item.kind === 'dialog') {
      return { state: 'over', why: 'not asked: another change was shown after it' };
    }
    if (item.kind === 'output') {
      if (asks && item.text.startsWith(asks)) {
        return { state: 'over', why: 'answered in the box' };
      }
      continue;
    }
    if (item.answered) {
      continue; // an earlier question's box, kept a moment after its answer
    }
    return asks && item.prompt.startsWith(asks)
      ? { state: 'asked', index }
      : { state: 'over', why: 'not asked: the next question is about something else' };
  }
  return { state: 'waiting' };
}
