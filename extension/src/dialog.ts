/**
 * The approval dialog: a change a cell wants to make (`application/vnd.lackpy.changes+json`,
 * sent beside its text and HTML) as its files with +/- counts, what runs code, what is
 * executable, each file's diff and what of it was not shown; or, for a call of a kernel-side
 * tool graded write, as `Call NAME(ARGS)?`. Its buttons answer the kernel's stdin question in
 * the same output area, as typing there would: Apply (`y`) for a change shown whole; for one
 * with something cut, Show all (`all`: the kernel shows it again in full, and asks again)
 * and Apply unseen (`unseen`), Apply staying off; Discard (`n`). The stdin box still takes
 * typing.
 *
 * Each dialog answers only its own question: the first input request after its display in
 * that output area, while no other change was shown before it, whose text begins with the
 * dialog's question (`bindingOf`). Once that question is answered, by a button or in the
 * box, the dialog is over for good.
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import type { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import {
  Action,
  Following,
  IChange,
  IFileChange,
  IToolCall,
  actionsOf,
  bindingOf,
  callOf,
  callQuestion,
  callReason,
  changeSummary,
  fileCounts,
  fileMarks,
  isComplete,
  lineKind,
  questionOf,
  replyFor,
  runsCodeOf,
  unseenOf
} from './change';
import { element } from './dom';

export const CHANGES_MIME = 'application/vnd.lackpy.changes+json';

const STDIN_ITEM = 'jp-OutputArea-stdin-item'; // JupyterLab's class of a stdin box's output item
const STDIN_HIDING = 'jp-OutputArea-stdin-hiding'; // added once its answer was sent

/** Each button: its label, its class, what the dialog says once it answered, its tooltip. */
const BUTTONS: Record<Action, { label: string; style: string; done: string; title: string }> = {
  all: {
    label: 'Show all',
    style: 'jp-mod-accept',
    done: 'showing all of it below',
    title: 'Show all of this change below (answers all), then decide'
  },
  apply: {
    label: 'Apply',
    style: 'jp-mod-accept',
    done: 'applied',
    title: 'Apply what is shown (answers y)'
  },
  unseen: {
    label: 'Apply unseen',
    style: 'jp-mod-warn',
    done: 'applied without seeing all of it',
    title: 'Apply this change with the parts not shown, unseen (answers unseen)'
  },
  discard: {
    label: 'Discard',
    style: 'jp-mod-reject',
    done: 'discarded',
    title: 'Discard this change (answers n)'
  }
};
const APPLY_CUT = 'Part of this change is not shown: Show all first, or Apply unseen';

/** Prominent: what runs code and what was not shown (the program's text, set as text). */
function warning(className: string, text: string): HTMLElement {
  const node = element('div', `lackpy-Changes-warning ${className}`, text);
  node.style.fontWeight = 'bold';
  node.style.color = 'var(--jp-warn-color0)';
  node.style.borderLeft = '3px solid var(--jp-warn-color1)';
  node.style.paddingLeft = '6px';
  node.style.margin = '2px 0';
  node.style.whiteSpace = 'pre-wrap';
  node.style.overflowWrap = 'anywhere';
  return node;
}

/** A file's summary: its note or counts, then its marks. */
function fileSummary(file: IFileChange): string {
  return [file.note || fileCounts(file), ...fileMarks(file)].filter(Boolean).join('; ');
}

/** What the question adds, one line each: the files that run code, then what was not shown. */
function warningsView(change: IChange): HTMLElement[] {
  const code = runsCodeOf(change);
  const unseen = unseenOf(change);
  return [
    ...code.map(line => warning('lackpy-Changes-runs', `runs code: ${line}`)),
    ...unseen.map(line => warning('lackpy-Changes-unseen', `not shown: ${line}`))
  ];
}

/** A change of files: its summary, warnings, a table of its files, then each file's diff. */
function filesView(change: IChange): HTMLElement[] {
  const summary = element('div', 'lackpy-Changes-summary', changeSummary(change));
  const table = element('table', 'lackpy-Changes-files');
  for (const file of change.files) {
    const row = table.insertRow();
    for (const text of [file.status, file.path, file.note || fileCounts(file)]) {
      row.insertCell().textContent = text;
    }
    for (const mark of fileMarks(file)) {
      const cell = row.insertCell();
      cell.className = 'lackpy-Changes-mark';
      cell.textContent = mark;
      cell.style.fontWeight = 'bold';
      cell.style.color = 'var(--jp-warn-color0)';
    }
  }
  const diffs = change.files.filter(file => file.lines.length || file.omitted || file.unseen).map(file => {
    const details = element('details', 'lackpy-Changes-diff');
    details.open = true;
    details.appendChild(element('summary', '', `${file.path} (${file.status}, ${fileSummary(file)})`));
    const pre = details.appendChild(element('pre', ''));
    for (const line of file.lines) {
      pre.appendChild(element('div', `lackpy-Diff-${lineKind(line)}`, line || ' '));
    }
    if (file.omitted) {
      pre.appendChild(element('div', 'lackpy-Diff-omitted',
        `... ${file.omitted} more line${file.omitted === 1 ? '' : 's'} not shown`));
    }
    if (file.unseen) {
      details.appendChild(warning('lackpy-Diff-unseen', `not shown: ${file.unseen}`));
    }
    return details;
  });
  return [summary, ...warningsView(change), table, ...diffs];
}

/** A call-only change: `Call NAME(ARGS)?`, why it is asked, and what of it was cut (text only: the arguments are the program's, markup and all). */
function callView(change: IChange, call: IToolCall): HTMLElement[] {
  return [
    element('div', 'lackpy-Changes-summary lackpy-Changes-call', callQuestion(call)),
    element('div', 'lackpy-Changes-reason', callReason(call)),
    ...warningsView(change)
  ];
}

/** What of `area`'s items follows `own` (the item holding the dialog), as `bindingOf` reads them. */
function following(area: Element, own: Element): { item: Element; read: Following }[] {
  const items = Array.from(area.children);
  return items.slice(items.indexOf(own) + 1).map(item => {
    if (item.querySelector('.lackpy-Changes')) {
      return { item, read: { kind: 'dialog' } };
    }
    const prompt = item.querySelector('.jp-Stdin-prompt');
    if (item.classList.contains(STDIN_ITEM) || prompt) {
      return { item, read: { kind: 'stdin', prompt: prompt?.textContent ?? '', answered: answered(item) } };
    }
    const shown = item.querySelector('.jp-OutputArea-output') ?? item;
    return { item, read: { kind: 'output', text: shown.textContent ?? '' } };
  });
}

/** Whether the stdin box `item` took its answer (or is gone: a cleared or rerun cell). */
function answered(item: Element): boolean {
  const input = item.querySelector<HTMLInputElement>('input.jp-Stdin-input');
  return item.classList.contains(STDIN_HIDING) || !input || input.disabled;
}

export class ChangeDialog extends Widget implements IRenderMime.IRenderer {
  constructor() {
    super();
    this.addClass('lackpy-Changes');
  }

  private observer: MutationObserver | null = null;
  private asks = ''; // how the kernel's stdin question about this change begins
  private asked: Element | null = null; // the stdin box of this dialog's question, once it came
  private over = false; // its question was answered, or will never come
  private buttons = new Map<Action, HTMLButtonElement>();
  private state: HTMLElement | null = null;

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const change = model.data[CHANGES_MIME] as unknown as IChange;
    const call = callOf(change);
    this.asks = questionOf(change);
    const row = element('div', 'lackpy-Changes-buttons');
    this.buttons.clear();
    for (const action of actionsOf(change)) {
      const { label, style, title } = BUTTONS[action];
      const button = row.appendChild(element('button', `jp-Dialog-button jp-mod-styled ${style}`, label));
      button.dataset.action = action;
      button.title = action === 'apply' && !isComplete(change) ? APPLY_CUT : title;
      button.onclick = () => this.answer(action);
      this.buttons.set(action, button);
    }
    this.state = row.appendChild(element('span', 'lackpy-Changes-state', this.state?.textContent ?? ''));
    this.node.replaceChildren(...(call ? callView(change, call) : filesView(change)), row);
    this.refresh();
  }

  /** The stdin box's prompt and input of this dialog's question, while it is asked; else null. */
  private question(): { prompt: string; input: HTMLInputElement } | null {
    if (this.over || !this.asked) {
      return null;
    }
    const input = this.asked.querySelector<HTMLInputElement>('input.jp-Stdin-input');
    const prompt = this.asked.querySelector('.jp-Stdin-prompt')?.textContent ?? '';
    return input ? { prompt, input } : null;
  }

  /** Follows the output area: binds the dialog to its question, ends it once that was answered. */
  private refresh(): void {
    this.follow();
    const asked = this.question();
    for (const [action, button] of this.buttons) {
      const off = (asked ? replyFor(action, asked.prompt) : null) === null;
      if (button.disabled !== off) {
        button.disabled = off;
      }
    }
  }

  private follow(): void {
    if (this.over) {
      return;
    }
    const area = this.node.closest('.jp-OutputArea');
    let own: Element = this.node;
    while (area && own.parentElement && own.parentElement !== area) {
      own = own.parentElement;
    }
    if (!area || own.parentElement !== area) {
      return; // not shown in an output area (yet)
    }
    if (this.asked) {
      if (!area.contains(this.asked) || answered(this.asked)) {
        this.end('answered in the box');
      }
      return;
    }
    const items = following(area, own);
    const binding = bindingOf(items.map(({ read }) => read), this.asks);
    if (binding.state === 'asked') {
      this.asked = items[binding.index].item;
    } else if (binding.state === 'over') {
      this.end(binding.why);
    }
  }

  /** Ends the dialog for good, saying why. */
  private end(why: string): void {
    this.over = true;
    this.observer?.disconnect();
    if (this.state && !this.state.textContent) {
      this.state.textContent = why;
    }
    this.buttons.forEach(button => (button.disabled = true));
  }

  /** Watches the output area for the kernel's question coming and being answered. */
  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    const area = this.node.closest('.jp-OutputArea');
    if (area && !this.over) {
      this.observer?.disconnect();
      // (not the dialog's own changes: setting a button's state would call it again)
      this.observer = new MutationObserver(records => {
        if (records.some(record => !this.node.contains(record.target))) {
          this.refresh();
        }
      });
      this.observer.observe(area, {
        childList: true,
        subtree: true,
        attributes: true,
        attributeFilter: ['class', 'disabled']
      });
    }
    this.refresh();
  }

  /** Answers this dialog's question as `action` does, as Enter in the stdin box would. */
  private answer(action: Action): void {
    this.refresh();
    const asked = this.question();
    const reply = asked ? replyFor(action, asked.prompt) : null;
    if (!asked || reply === null) {
      return;
    }
    if (this.state) {
      this.state.textContent = BUTTONS[action].done;
    }
    this.end(BUTTONS[action].done);
    asked.input.value = reply;
    asked.input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
  }

  dispose(): void {
    this.observer?.disconnect();
    super.dispose();
  }
}
