/**
 * A small contents drive for plan mode's plans, so "Edit the plan" opens them
 * in JupyterLab's own text editor.
 *
 * Plans are Markdown files under a hidden folder of the server root
 * (`.aaep/plans`), which Jupyter's contents API refuses to serve unless the
 * server allows hidden files. This drive reads and saves them through the
 * extension's `aaep/v1/plans/{name}` endpoint instead: the editor opens
 * `AAEPPlans:plan-….md`, and what the person saves there is what the agent
 * follows. It holds only existing plans: nothing can be created, renamed,
 * copied or deleted through it.
 */
import { Contents, ServerConnection } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

import { requestAPI, serverSettings } from './handler';

/** The drive's name: a path `AAEPPlans:<name>` opens a plan. */
export const PLAN_DRIVE = 'AAEPPlans';

/** The path the editor opens for a plan's file (`.aaep/plans/plan-….md`). */
export function planEditorPath(file: string): string {
  const name = file.split('/').pop() ?? file;
  return `${PLAN_DRIVE}:${name}`;
}

interface IPlanFile {
  name: string;
  content: string;
  /** The file's modification time (the editor compares it before it saves). */
  last_modified: string;
}

function model(file: IPlanFile, withContent: boolean): Contents.IModel {
  return {
    name: file.name,
    path: file.name,
    type: 'file',
    writable: true,
    created: file.last_modified,
    last_modified: file.last_modified,
    mimetype: 'text/markdown',
    content: withContent ? file.content : null,
    format: withContent ? 'text' : null,
    size: file.content.length
  };
}

function refused(what: string): Promise<never> {
  return Promise.reject(new Error(`Plans cannot be ${what} here; only edited and saved.`));
}

/** Reads and saves plans through the server extension. */
export class PlanDrive implements Contents.IDrive {
  readonly name = PLAN_DRIVE;
  readonly serverSettings: ServerConnection.ISettings = serverSettings();

  get fileChanged(): ISignal<Contents.IDrive, Contents.IChangedArgs> {
    return this._fileChanged;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  dispose(): void {
    this._disposed = true;
    Signal.clearData(this);
  }

  async get(localPath: string, options?: Contents.IFetchOptions): Promise<Contents.IModel> {
    const file = await requestAPI<IPlanFile>(['plans', localPath]);
    return model(file, options?.content !== false);
  }

  async save(localPath: string, options: Partial<Contents.IModel> = {}): Promise<Contents.IModel> {
    const content = typeof options.content === 'string' ? options.content : '';
    const file = await requestAPI<IPlanFile>(['plans', localPath], { method: 'PUT', body: { content } });
    const saved = model(file, false);
    this._fileChanged.emit({ type: 'save', oldValue: null, newValue: saved });
    return saved;
  }

  getDownloadUrl(): Promise<string> {
    return refused('downloaded');
  }
  newUntitled(): Promise<Contents.IModel> {
    return refused('created');
  }
  delete(): Promise<void> {
    return refused('deleted');
  }
  rename(): Promise<Contents.IModel> {
    return refused('renamed');
  }
  copy(): Promise<Contents.IModel> {
    return refused('copied');
  }
  async createCheckpoint(): Promise<Contents.ICheckpointModel> {
    return { id: 'none', last_modified: new Date().toISOString() };
  }
  async listCheckpoints(): Promise<Contents.ICheckpointModel[]> {
    return [];
  }
  async restoreCheckpoint(): Promise<void> {
    return;
  }
  async deleteCheckpoint(): Promise<void> {
    return;
  }

  private _disposed = false;
  private _fileChanged = new Signal<Contents.IDrive, Contents.IChangedArgs>(this);
}
