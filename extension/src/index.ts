/**
 * lackpy in JupyterLab (and Notebook 7): live validation of lackpy cells as the person types,
 * a command (palette and the active cell's toolbar: "Delegate to lackpy…") that runs
 * `%delegate` for an intent, and a status-bar item naming the session's kit and its grade.
 *
 * Each cell of a lackpy notebook, and each `%%lackpy` cell of a Python notebook, is sent
 * (debounced) to the server extension's `POST /lackpy/validate`, never to the kernel: a
 * running cell never delays it and nothing runs. Each problem is underlined at its place,
 * with the validator's own message on hover. The names the session knows come from the
 * kernel's execute_reply metadata (`metadata.lackpy`), after each cell; so does the kit
 * (asked once with a silent empty request when a lackpy notebook's kernel starts, so the
 * status bar names it before a cell runs).
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
import { IStatusBar } from '@jupyterlab/statusbar';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import { Diagnostic, setDiagnostics } from '@codemirror/lint';

import {
  IKitInfo,
  IProblem,
  ISessionNames,
  UNKNOWN_NAMES,
  delegateCell,
  delegateOffered,
  kitFromReply,
  kitStatus,
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

/** The notebook's language as its metadata says (`lackpy`, `python`, ...). */
function notebookLanguage(panel: NotebookPanel): string {
  const model = panel.content.model;
  const info = model?.getMetadata('language_info') as { name?: string } | undefined;
  const spec = model?.getMetadata('kernelspec') as { language?: string } | undefined;
  return (info?.name ?? spec?.language ?? '').toLowerCase();
}

/**
 * What one notebook's kernel last said of its session (execute_reply metadata): the names
 * for live validation (from the cells that ran) and the kit for the status bar.
 */
class SessionWatcher {
  constructor(private panel: NotebookPanel) {
    const session = panel.sessionContext;
    session.kernelChanged.connect(this.onKernelChanged, this);
    session.statusChanged.connect((_, status) => {
      if (status === 'restarting' || status === 'autorestarting') {
        this.forget();
      } else if (status === 'idle' && this.askWhenIdle) {
        this.askKit();
      }
    });
    panel.disposed.connect(() => Signal.clearData(this));
    this.onKernelChanged();
  }

  /** Emitted when the names or the kit change. */
  readonly changed = new Signal<SessionWatcher, void>(this);
  names: ISessionNames = UNKNOWN_NAMES;
  kit: IKitInfo | null = null;
  private kernel: Kernel.IKernelConnection | null = null;
  private asking = new Set<string>();
  private askWhenIdle = true;

  get language(): string {
    return notebookLanguage(this.panel);
  }

  private onKernelChanged(): void {
    this.kernel?.anyMessage.disconnect(this.onMessage, this);
    this.kernel = this.panel.sessionContext.session?.kernel ?? null;
    this.kernel?.anyMessage.connect(this.onMessage, this);
    this.forget();
    if (this.kernel?.status === 'idle') {
      this.askKit();
    }
  }

  private forget(): void {
    this.names = UNKNOWN_NAMES;
    this.kit = null;
    this.askWhenIdle = true;
    this.changed.emit();
  }

  /**
   * A silent empty request to a lackpy kernel: its reply names the kit; nothing runs. (Asked
   * again at the next idle while the notebook's language is not known yet.)
   */
  private askKit(): void {
    if (!this.kernel || this.language !== 'lackpy') {
      return;
    }
    this.askWhenIdle = false;
    const future = this.kernel.requestExecute({
      code: '',
      silent: true,
      store_history: false,
      allow_stdin: false,
      stop_on_error: false
    });
    const id = future.msg.header.msg_id;
    this.asking.add(id);
    void future.done.catch(() => undefined).then(() => this.asking.delete(id));
  }

  private onMessage(_: Kernel.IKernelConnection, args: Kernel.IAnyMessageArgs): void {
    const msg = args.msg as KernelMessage.IMessage;
    if (args.direction !== 'recv' || msg.header.msg_type !== 'execute_reply') {
      return;
    }
    this.kit = kitFromReply(msg.metadata) ?? this.kit;
    const parent = (msg.parent_header as { msg_id?: string }).msg_id ?? '';
    // The names a cell left: before one has run, no name is flagged as unknown.
    const said = this.asking.has(parent) ? null : namesFromReply(msg.metadata);
    this.names = said ?? this.names;
    this.changed.emit();
  }
}

const watchers = new WeakMap<NotebookPanel, SessionWatcher>();

/** The watcher of `panel`'s session (one per notebook). */
function watcherOf(panel: NotebookPanel): SessionWatcher {
  let watcher = watchers.get(panel);
  if (!watcher) {
    watcher = new SessionWatcher(panel);
    watchers.set(panel, watcher);
  }
  return watcher;
}

/** One notebook's live validation: its cells, its pending checks. */
class NotebookChecker {
  constructor(
    private panel: NotebookPanel,
    private settings: ServerConnection.ISettings
  ) {
    this.session = watcherOf(panel);
    this.session.changed.connect(() => {
      if (this.session.names !== this.names) {
        this.names = this.session.names;
        this.checkAll();
      }
    });
    panel.content.model?.cells.changed.connect(() => this.watchCells());
    panel.content.model?.metadataChanged.connect(() => this.checkAll());
    this.watchCells();
    void panel.revealed.then(() => this.checkAll());
  }

  private session: SessionWatcher;
  private names: ISessionNames = UNKNOWN_NAMES;
  private watched = new WeakSet<object>();
  private timers = new Map<Cell, number>();
  private asked = new Map<Cell, number>();
  private marked = new WeakSet<Cell>();

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
      cell.model.type === 'code' ? languageOf(this.session.language, source) : null;
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
      isVisible: () => {
        const panel = notebooks.currentWidget;
        const cells = panel?.content.model?.sharedModel.cells ?? [];
        return panel !== null && delegateOffered(notebookLanguage(panel),
                                                 cells.map(cell => cell.getSource()));
      },
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
    // The toolbars ask again whether it is offered when the notebook, its cell, its
    // metadata (its language) or its cells (a %load_ext) change.
    const changed = () => app.commands.notifyCommandChanged(DELEGATE);
    notebooks.currentChanged.connect(changed);
    notebooks.activeCellChanged.connect(changed);
    notebooks.widgetAdded.connect((_, panel) => {
      void panel.context.ready.then(changed);
      panel.context.model.metadataChanged.connect(changed);
      panel.context.model.contentChanged.connect(changed);
    });
  }
};

/** The status-bar item: the current notebook's kit and its grade, as its kernel said. */
class KitStatus extends Widget {
  constructor(notebooks: INotebookTracker) {
    super({ node: document.createElement('span') });
    this.addClass('lackpy-KitStatus');
    notebooks.currentChanged.connect((_, panel) => this.follow(panel));
    this.follow(notebooks.currentWidget);
  }

  /** Emitted when the item comes and goes (a lackpy notebook whose kit is known). */
  readonly activeChanged = new Signal<KitStatus, void>(this);
  private watcher: SessionWatcher | null = null;

  get active(): boolean {
    return this.watcher?.kit != null;
  }

  private follow(panel: NotebookPanel | null): void {
    this.watcher?.changed.disconnect(this.render, this);
    this.watcher = panel ? watcherOf(panel) : null;
    this.watcher?.changed.connect(this.render, this);
    this.render();
  }

  private render(): void {
    const kit = this.watcher?.kit;
    const shown = kit ? kitStatus(kit) : { text: '', title: '' };
    this.node.textContent = shown.text;
    this.node.title = shown.title;
    this.activeChanged.emit();
  }
}

const kitStatusItem: JupyterFrontEndPlugin<void> = {
  id: 'lackpy-kernel:kit-status',
  description: "Shows the lackpy session's kit and its grade in the status bar.",
  autoStart: true,
  requires: [INotebookTracker],
  optional: [IStatusBar],
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker,
    statusBar: IStatusBar | null
  ) => {
    if (!statusBar) {
      return;
    }
    const item = new KitStatus(notebooks);
    statusBar.registerStatusItem(kitStatusItem.id, {
      item,
      align: 'left',
      rank: 4,
      isActive: () => item.active,
      activeStateChanged: item.activeChanged
    });
  }
};

export default [validation, delegate, kitStatusItem];
