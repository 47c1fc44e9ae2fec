/**
 * lackpy in JupyterLab (and Notebook 7): live validation of lackpy cells as the person types,
 * and a command (palette: "Delegate to lackpy…") that runs `%delegate` for an intent.
 *
 * Each cell of a lackpy notebook, and each `%%lackpy` cell of a Python notebook, is sent
 * (debounced) to the server extension's `POST /lackpy/validate`, never to the kernel: a
 * running cell never delays it and nothing runs. Each problem is underlined at its place,
 * with the validator's own message on hover. The names the session knows come from the
 * kernel's execute_reply metadata (`metadata.lackpy`), after each cell.
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Cell } from '@jupyterlab/cells';
import { CodeMirrorEditor } from '@jupyterlab/codemirror';
import { URLExt } from '@jupyterlab/coreutils';
import { ICommandPalette, InputDialog } from '@jupyterlab/apputils';
import {
  INotebookTracker,
  NotebookActions,
  NotebookPanel
} from '@jupyterlab/notebook';
import { Kernel, KernelMessage, ServerConnection } from '@jupyterlab/services';
import { Diagnostic, setDiagnostics } from '@codemirror/lint';

import {
  IProblem,
  ISessionNames,
  UNKNOWN_NAMES,
  delegateCell,
  languageOf,
  namesFromReply,
  rangeOf
} from './logic';

const DEBOUNCE_MS = 300;
const VALIDATE_PATH = 'lackpy/validate';

/** Asks the server extension for a cell's problems; null when it cannot answer. */
async function askProblems(
  settings: ServerConnection.ISettings,
  body: object
): Promise<IProblem[] | null> {
  const url = URLExt.join(settings.baseUrl, VALIDATE_PATH);
  const reply = await ServerConnection.makeRequest(
    url,
    { method: 'POST', body: JSON.stringify(body) },
    settings
  );
  if (!reply.ok) {
    console.warn(`lackpy: live validation got ${reply.status}: ${await reply.text()}`);
    return null;
  }
  return ((await reply.json()) as { problems: IProblem[] }).problems;
}

/** One notebook's live validation: its cells, its kernel's names, its pending checks. */
class NotebookChecker {
  constructor(
    private panel: NotebookPanel,
    private settings: ServerConnection.ISettings
  ) {
    const session = panel.sessionContext;
    session.kernelChanged.connect(this.onKernelChanged, this);
    session.statusChanged.connect((_, status) => {
      if (status === 'restarting' || status === 'autorestarting') {
        this.names = UNKNOWN_NAMES;
      }
    });
    this.onKernelChanged();
    panel.content.model?.cells.changed.connect(() => this.watchCells());
    panel.content.model?.metadataChanged.connect(() => this.checkAll());
    this.watchCells();
    void panel.revealed.then(() => this.checkAll());
  }

  private names: ISessionNames = UNKNOWN_NAMES;
  private kernel: Kernel.IKernelConnection | null = null;
  private watched = new WeakSet<object>();
  private timers = new Map<Cell, number>();
  private asked = new Map<Cell, number>();
  private marked = new WeakSet<Cell>();

  /** The notebook's language as its metadata says (`lackpy`, `python`, ...). */
  private get language(): string {
    const model = this.panel.content.model;
    const info = model?.getMetadata('language_info') as { name?: string } | undefined;
    const spec = model?.getMetadata('kernelspec') as { language?: string } | undefined;
    return (info?.name ?? spec?.language ?? '').toLowerCase();
  }

  private onKernelChanged(): void {
    this.kernel?.anyMessage.disconnect(this.onMessage, this);
    this.kernel = this.panel.sessionContext.session?.kernel ?? null;
    this.kernel?.anyMessage.connect(this.onMessage, this);
    this.names = UNKNOWN_NAMES;
  }

  private onMessage(_: Kernel.IKernelConnection, args: Kernel.IAnyMessageArgs): void {
    const msg = args.msg as KernelMessage.IMessage;
    if (args.direction !== 'recv' || msg.header.msg_type !== 'execute_reply') {
      return;
    }
    const said = namesFromReply(msg.metadata);
    if (said) {
      this.names = said;
      this.checkAll();
    }
  }

  /** Schedules a check whenever a cell's text changes (each cell watched once). */
  private watchCells(): void {
    for (const cell of this.panel.content.widgets) {
      if (!this.watched.has(cell.model)) {
        this.watched.add(cell.model);
        cell.model.contentChanged.connect(() => this.schedule(cell));
      }
    }
  }

  private checkAll(): void {
    this.panel.content.widgets.forEach(cell => this.schedule(cell));
  }

  private schedule(cell: Cell): void {
    window.clearTimeout(this.timers.get(cell));
    this.timers.set(
      cell,
      window.setTimeout(() => void this.check(cell), DEBOUNCE_MS)
    );
  }

  private async check(cell: Cell): Promise<void> {
    this.timers.delete(cell);
    const source = cell.model.sharedModel.getSource();
    const language =
      cell.model.type === 'code' ? languageOf(this.language, source) : null;
    if (language === null) {
      this.show(cell, source, []);
      return;
    }
    const ticket = (this.asked.get(cell) ?? 0) + 1;
    this.asked.set(cell, ticket);
    const { names, tools } = this.names;
    const problems = await askProblems(this.settings, { source, language, names, tools });
    if (problems !== null && this.asked.get(cell) === ticket) {
      this.show(cell, source, problems);
    }
  }

  /** Underlines `problems` in the cell's editor, when it still shows `source`. */
  private show(cell: Cell, source: string, problems: IProblem[]): void {
    const view = (cell.editor as CodeMirrorEditor | null)?.editor;
    if (!view || (problems.length === 0 && !this.marked.has(cell))) {
      return;
    }
    const text = view.state.doc.toString();
    if (text !== source) {
      return; // typed since: the next check answers
    }
    const diagnostics: Diagnostic[] = problems.map(problem => ({
      ...rangeOf(text, problem),
      severity: 'error',
      source: 'lackpy',
      markClass: 'lackpy-Problem',
      message: problem.message
    }));
    view.dispatch(setDiagnostics(view.state, diagnostics));
    if (problems.length) {
      this.marked.add(cell);
    } else {
      this.marked.delete(cell);
    }
  }
}

const validation: JupyterFrontEndPlugin<void> = {
  id: 'lackpy-kernel:validation',
  description: 'Underlines the problems of lackpy cells as you type.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, notebooks: INotebookTracker) => {
    const settings = app.serviceManager.serverSettings;
    notebooks.widgetAdded.connect((_, panel) => new NotebookChecker(panel, settings));
  }
};

const DELEGATE = 'lackpy-kernel:delegate';

const delegate: JupyterFrontEndPlugin<void> = {
  id: DELEGATE,
  description: 'Asks for an intent and runs %delegate with it below the active cell.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker,
    palette: ICommandPalette | null
  ) => {
    app.commands.addCommand(DELEGATE, {
      label: 'Delegate to lackpy…',
      caption: 'Write a program for an intent (%delegate) and insert it below',
      isEnabled: () => notebooks.currentWidget !== null,
      execute: async () => {
        const panel = notebooks.currentWidget;
        if (!panel) {
          return;
        }
        const asked = await InputDialog.getText({
          title: 'Delegate to lackpy',
          label: 'What should the program do?',
          placeholder: 'e.g. count the lines of notes.txt'
        });
        if (!asked.button.accept || !asked.value?.trim()) {
          return;
        }
        NotebookActions.insertBelow(panel.content);
        panel.content.activeCell?.model.sharedModel.setSource(delegateCell(asked.value));
        await NotebookActions.run(panel.content, panel.sessionContext);
      }
    });
    palette?.addItem({ command: DELEGATE, category: 'lackpy' });
  }
};

export default [validation, delegate];
