/**
 * The approval dialog: a change a cell wants to make (`application/vnd.lackpy.changes+json`,
 * sent beside its text and HTML) as its files with +/- counts and each file's diff, or, for
 * a call of a kernel-side tool graded write, as `Call NAME(ARGS)?`; with Apply and Discard.
 * They answer the kernel's stdin question ("Apply these changes?", "Call NAME?") in the same output area,
 * as typing y or n there would; the stdin box still takes typing.
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import type { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import {
  IChange,
  IToolCall,
  callOf,
  callQuestion,
  callReason,
  changeSummary,
  fileCounts,
  lineKind,
  questionOf
} from './change';
import { element } from './dom';

export const CHANGES_MIME = 'application/vnd.lackpy.changes+json';

/** A change of files: its summary, a table of its files, then each file's diff. */
function filesView(change: IChange): HTMLElement[] {
  const summary = element('div', 'lackpy-Changes-summary', changeSummary(change));
  const table = element('table', 'lackpy-Changes-files');
  for (const file of change.files) {
    const row = table.insertRow();
    for (const text of [file.status, file.path, file.note || fileCounts(file)]) {
      row.insertCell().textContent = text;
    }
  }
  const diffs = change.files.filter(file => file.lines.length || file.omitted).map(file => {
    const details = element('details', 'lackpy-Changes-diff');
    details.open = true;
    details.appendChild(
      element('summary', '', `${file.path} (${file.status}, ${file.note || fileCounts(file)})`)
    );
    const pre = details.appendChild(element('pre', ''));
    for (const line of file.lines) {
      pre.appendChild(element('div', `lackpy-Diff-${lineKind(line)}`, line || ' '));
    }
    if (file.omitted) {
      pre.appendChild(element('div', 'lackpy-Diff-omitted',
        `... ${file.omitted} more line${file.omitted === 1 ? '' : 's'} not shown`));
    }
    return details;
  });
  return [summary, table, ...diffs];
}

/** A call-only change: `Call NAME(ARGS)?` and why it is asked (text only: the arguments are the program's, markup and all). */
function callView(call: IToolCall): HTMLElement[] {
  return [
    element('div', 'lackpy-Changes-summary lackpy-Changes-call', callQuestion(call)),
    element('div', 'lackpy-Changes-reason', callReason(call))
  ];
}

export class ChangeDialog extends Widget implements IRenderMime.IRenderer {
  constructor() {
    super();
    this.addClass('lackpy-Changes');
  }

  private observer: MutationObserver | null = null;
  private answered = false;
  private asks = ''; // how the kernel's stdin question about this change begins

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const change = model.data[CHANGES_MIME] as unknown as IChange;
    const call = callOf(change);
    this.asks = questionOf(change);
    const buttons = element('div', 'lackpy-Changes-buttons');
    const apply = buttons.appendChild(element('button', 'jp-Dialog-button jp-mod-styled jp-mod-accept', 'Apply'));
    const discard = buttons.appendChild(element('button', 'jp-Dialog-button jp-mod-styled jp-mod-reject', 'Discard'));
    const state = buttons.appendChild(element('span', 'lackpy-Changes-state'));
    apply.onclick = () => this.answer('y', 'applied', state);
    discard.onclick = () => this.answer('n', 'discarded', state);
    this.node.replaceChildren(...(call ? callView(call) : filesView(change)), buttons);
    this.refresh();
  }

  /** The stdin box asking this dialog's question in the same output area, or null. */
  private question(): HTMLInputElement | null {
    const area = this.node.closest('.jp-OutputArea');
    for (const stdin of Array.from(area?.querySelectorAll('.jp-Stdin') ?? [])) {
      const prompt = stdin.querySelector('.jp-Stdin-prompt')?.textContent ?? '';
      const input = stdin.querySelector<HTMLInputElement>('input.jp-Stdin-input');
      if (this.asks && prompt.startsWith(this.asks) && input && !input.disabled) {
        return input;
      }
    }
    return null;
  }

  /** Enables the buttons while the kernel asks (and the dialog has not answered). */
  private refresh(): void {
    const asked = !this.answered && this.question() !== null;
    this.node.querySelectorAll('button').forEach(button => (button.disabled = !asked));
  }

  /** Watches the output area for the kernel's question coming and going. */
  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    const area = this.node.closest('.jp-OutputArea');
    if (area) {
      this.observer?.disconnect();
      this.observer = new MutationObserver(() => this.refresh());
      this.observer.observe(area, { childList: true, subtree: true });
    }
    this.refresh();
  }

  /** Answers the kernel's question with `reply`, as Enter in the stdin box would. */
  private answer(reply: string, done: string, state: HTMLElement): void {
    const input = this.question();
    if (!input || this.answered) {
      return;
    }
    this.answered = true;
    input.value = reply;
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    state.textContent = done;
    this.node.querySelectorAll('button').forEach(button => (button.disabled = true));
  }

  dispose(): void {
    this.observer?.disconnect();
    super.dispose();
  }
}
