/**
 * The progress card: a `%delegate`, a plan's run or an agent's
 * (`application/vnd.lackpy.progress+json`, sent beside its text and updated in place) as a
 * compact list: each tier, step or turn with its status, what it did and its time; for
 * `%delegate` the program as a model writes it, then the tier that answered as a badge.
 * Everything is set as text, never as markup.
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { element } from './dom';
import { IProgressCard, cardSummary, markOf, toneOf } from './progress';

export const PROGRESS_MIME = 'application/vnd.lackpy.progress+json';

export class ProgressView extends Widget implements IRenderMime.IRenderer {
  constructor() {
    super();
    this.addClass('lackpy-Progress');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const card = model.data[PROGRESS_MIME] as unknown as IProgressCard;
    this.node.dataset.state = toneOf(card.state);
    this.node.dataset.kind = card.kind;
    const head = element('div', 'lackpy-Progress-head');
    head.append(
      element('span', 'lackpy-Progress-state', card.state),
      ...(card.title ? [element('span', 'lackpy-Progress-title', card.title)] : []),
      ...(card.badge ? [element('span', 'lackpy-Progress-badge', card.badge)] : []),
      element('span', 'lackpy-Progress-summary', cardSummary(card))
    );
    const list = element('ol', 'lackpy-Progress-items');
    for (const item of card.items) {
      const tone = toneOf(item.status);
      const row = list.appendChild(element('li', 'lackpy-Progress-item'));
      row.dataset.tone = tone;
      row.append(
        element('span', 'lackpy-Progress-mark', markOf(tone)),
        element('span', 'lackpy-Progress-name', item.name),
        element('span', 'lackpy-Progress-status', item.status),
        element('span', 'lackpy-Progress-detail', item.detail),
        element('span', 'lackpy-Progress-ms', item.ms)
      );
    }
    const parts: HTMLElement[] = [head, list];
    if (card.program) {
      const program = element('div', 'lackpy-Progress-program');
      program.append(
        element('div', 'lackpy-Progress-label', card.program_label),
        element('pre', '', card.program)
      );
      parts.push(program);
    }
    if (card.note) {
      parts.push(element('div', 'lackpy-Progress-note', card.note));
    }
    this.node.replaceChildren(...parts);
  }
}
