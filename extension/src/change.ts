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

/**
 * A call of a tool graded write that runs in the kernel (`ToolCall.to_frame()`), asked for
 * before it runs: the tool's name and its arguments as the kernel wrote them (bounded,
 * printable, but the program's own: text to show, never markup).
 */
export interface IToolCall {
  name: string;
  arguments: string;
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
 * on its side; the answers ` [y/N]` follow): for a call, `Call NAME?`.
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
