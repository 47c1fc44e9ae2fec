/** A trace as the kernel sends it for the renderer, and how its rows sort. */

export interface ITrace {
  title: string;
  columns: string[];
  numeric: boolean[];
  rows: string[][];
  files_read: string[];
  files_modified: string[];
  open: boolean;
}

/** `rows` sorted by `column` (as numbers where `numeric`, else as text), stably. */
export function sortRows(
  rows: string[][],
  column: number,
  numeric: boolean,
  descending: boolean
): string[][] {
  const key = (row: string[]) => row[column] ?? '';
  const compare = numeric
    ? (a: string[], b: string[]) => parseFloat(key(a)) - parseFloat(key(b))
    : (a: string[], b: string[]) => key(a).localeCompare(key(b));
  const sorted = [...rows].sort(compare);
  return descending ? sorted.reverse() : sorted;
}

/** A URL scheme at the start (`javascript:`, `https:`, `file:`), as a browser reads one. */
const SCHEME = /^[a-z][a-z\d+.-]*:/i;
// What a browser drops or reads specially in an address: controls, blanks, backslashes.
const ODD = /[\u0000-\u001f\u007f-\u009f\\]/;

/**
 * The link of a file a trace names, or null when `path` is not plainly workspace-relative (a
 * scheme, a leading `/`, a `..` step, a control character or a backslash): then it is shown
 * as text only. The link is `./` and each step of the path percent-encoded, so no name can
 * make it an address of another kind (`javascript:`, `data:`, `//host`).
 */
export function traceHref(path: string): string | null {
  const steps = path.split('/');
  if (!path || path.startsWith('/') || ODD.test(path) || SCHEME.test(path.trimStart()) ||
      steps.includes('..') || steps.some(step => step.trim() === '')) {
    return null;
  }
  return './' + steps.map(encodeURIComponent).join('/');
}
