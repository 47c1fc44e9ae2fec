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
