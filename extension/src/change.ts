/** A program's file change as the kernel sends it for approval, and how it reads. */

/** One file's change (`FileChange.to_frame()` on the kernel's side). */
export interface IFileChange {
  path: string;
  status: string;
  added: number;
  removed: number;
  lines: string[];
  omitted: number;
  note: string;
}

/** A change (`Change.to_frame()`): its files in the order the program wrote them. */
export interface IChange {
  files: IFileChange[];
}

/** The stdin question the kernel asks after showing a change. */
export const QUESTION = 'Apply these changes?';

/** `N files changed: +A -R`, as the kernel's text says it. */
export function changeSummary(change: IChange): string {
  const count = change.files.length;
  const added = change.files.reduce((sum, file) => sum + file.added, 0);
  const removed = change.files.reduce((sum, file) => sum + file.removed, 0);
  return `${count} file${count === 1 ? '' : 's'} changed: +${added} -${removed}`;
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
