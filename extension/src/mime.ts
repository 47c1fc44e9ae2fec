/**
 * The renderers (a mime extension): the approval dialog (./dialog), the progress card
 * (./card) and the trace renderer: a program's tool calls (`application/vnd.lackpy.trace+json`, which
 * the kernel sends beside the trace's text/plain and text/html) as a table sorted by a
 * click on a column's head, and the files read and modified as links that open in Lab (a
 * workspace-relative path only; any other name is text).
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { PROGRESS_MIME, ProgressView } from './card';
import { CHANGES_MIME, ChangeDialog } from './dialog';
import { ITrace, sortRows, traceHref } from './trace';

export const TRACE_MIME = 'application/vnd.lackpy.trace+json';

class TraceRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(private options: IRenderMime.IRendererOptions) {
    super();
    this.addClass('lackpy-Trace');
  }

  private trace: ITrace | null = null;
  private sortedBy: { column: number; descending: boolean } | null = null;

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.trace = model.data[TRACE_MIME] as unknown as ITrace;
    this.draw();
  }

  private draw(): void {
    const trace = this.trace;
    if (trace === null) {
      return;
    }
    const details = document.createElement('details');
    details.open = trace.open || this.node.querySelector('details')?.open === true;
    const summary = details.appendChild(document.createElement('summary'));
    summary.textContent = trace.title;
    details.appendChild(this.table(trace));
    for (const [label, paths] of [
      ['read', trace.files_read],
      ['modified', trace.files_modified]
    ] as const) {
      if (paths.length) {
        details.appendChild(this.files(label, paths));
      }
    }
    this.node.replaceChildren(details);
  }

  private table(trace: ITrace): HTMLTableElement {
    const table = document.createElement('table');
    const head = table.createTHead().insertRow();
    trace.columns.forEach((column, index) => {
      const th = document.createElement('th');
      th.textContent = column;
      th.title = `sort by ${column}`;
      th.style.textAlign = trace.numeric[index] ? 'right' : 'left';
      const sorted = this.sortedBy?.column === index;
      th.dataset.sorted = sorted ? (this.sortedBy!.descending ? 'descending' : 'ascending') : '';
      th.onclick = () => {
        const descending = sorted && !this.sortedBy!.descending;
        this.sortedBy = { column: index, descending };
        this.draw();
      };
      head.appendChild(th);
    });
    const body = table.createTBody();
    const rows = this.sortedBy
      ? sortRows(trace.rows, this.sortedBy.column, trace.numeric[this.sortedBy.column],
                 this.sortedBy.descending)
      : trace.rows;
    for (const row of rows) {
      const tr = body.insertRow();
      row.forEach((value, index) => {
        const td = tr.insertCell();
        td.textContent = value;
        td.style.textAlign = trace.numeric[index] ? 'right' : 'left';
      });
    }
    return table;
  }

  private files(label: string, paths: string[]): HTMLElement {
    const line = document.createElement('div');
    line.className = 'lackpy-Trace-files';
    line.append(`${label}: `);
    paths.forEach((path, index) => {
      const href = traceHref(path);
      const shown = document.createElement(href === null ? 'span' : 'a');
      shown.textContent = path;
      if (shown instanceof HTMLAnchorElement && href !== null) {
        shown.href = href;
        void this.openInLab(shown, href);
      }
      line.append(...(index ? [', ', shown] : [shown]));
    });
    return line;
  }

  /**
   * Makes `link` open the file at `href` (a `traceHref`: relative to the notebook's folder)
   * in Lab, as JupyterLab's own renderers do a local link.
   */
  private async openInLab(link: HTMLAnchorElement, href: string): Promise<void> {
    const { resolver, linkHandler } = this.options;
    if (!resolver || !linkHandler) {
      return;
    }
    const resolved = await resolver.resolveUrl(href);
    if (!resolver.isLocal || resolver.isLocal(resolved)) {
      linkHandler.handleLink(link, decodeURIComponent(resolved));
      link.href = await resolver.getDownloadUrl(resolved);
    }
  }
}

/**
 * The extension that draws `mime` with `create`, ranked (10) before the text/html (50) and
 * text/plain (120) the kernel sends beside it.
 */
function renderer(
  name: string,
  description: string,
  mime: string,
  create: (options: IRenderMime.IRendererOptions) => IRenderMime.IRenderer
): IRenderMime.IExtension {
  return {
    id: `lackpy-kernel:${name}`,
    description,
    rendererFactory: { safe: true, mimeTypes: [mime], createRenderer: create },
    rank: 10,
    dataType: 'json'
  };
}

export default [
  renderer('trace', "Shows a lackpy program's trace as a sortable table.", TRACE_MIME,
           options => new TraceRenderer(options)),
  renderer('approval', 'Shows a change a cell wants to make, with Apply and Discard.',
           CHANGES_MIME, () => new ChangeDialog()),
  renderer('progress', 'Shows a %delegate, a plan run or an agent run as a live card.',
           PROGRESS_MIME, () => new ProgressView())
];
