/**
 * A run's progress as the kernel sends it for the card (`ProgressCard.to_dict()` on its
 * side), and how the card reads it: each status's tone and mark, and a one-line summary.
 */

/** One line: a tier, a step or a turn. */
export interface IProgressItem {
  name: string;
  status: string;
  detail: string;
  ms: string;
}

/** A `%delegate`, a plan's run (`many`: one per task of `%plan run-many`) or an agent's, so far. */
export interface IProgressCard {
  kind: 'delegate' | 'plan' | 'many' | 'agent' | 'replan';
  title: string;
  state: string;
  items: IProgressItem[];
  badge: string;
  program: string;
  program_label: string;
  note: string;
}

/** How a status looks: done well, under way, failed, not started, stopped, or passed over. */
export type Tone = 'ok' | 'running' | 'failed' | 'waiting' | 'paused' | 'skipped';

const TONES: [RegExp, Tone][] = [
  [/^(done|done earlier|ok|answered|answer|valid|planned|tools)$/, 'ok'],
  [/^(running|trying|thinking|planning|retrying)(:|$)/, 'running'],
  [/^(failed|no program|still invalid)(:|$)/, 'failed'],
  [/^(paused|interrupted|retry)$/, 'paused'],
  [/^(unavailable|skipped)$/, 'skipped']
];

/** The tone of a status as the kernel words it (a run's state too); `waiting` otherwise. */
export function toneOf(status: string): Tone {
  const found = TONES.find(([pattern]) => pattern.test(status));
  return found ? found[1] : 'waiting';
}

const MARKS: Record<Tone, string> = {
  ok: '\u2713',
  running: '\u25CF',
  failed: '\u2717',
  waiting: '\u25CB',
  paused: '\u2016',
  skipped: '\u2013'
};

/** The mark a line starts with for its tone. */
export function markOf(tone: Tone): string {
  return MARKS[tone];
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

/**
 * What the card's head says beside its title: tiers tried, steps (tasks) done of all, or
 * turns (rounds) and tool calls.
 */
export function cardSummary(card: IProgressCard): string {
  const { items } = card;
  if (card.kind === 'delegate') {
    const tiers = items.filter(item => !item.name.includes(': '));
    return plural(tiers.length, 'tier') + ' tried';
  }
  if (card.kind === 'plan' || card.kind === 'many') {
    const done = items.filter(item => toneOf(item.status) === 'ok').length;
    return `${done} of ${plural(items.length, card.kind === 'plan' ? 'step' : 'task')} done`;
  }
  const label = card.kind === 'agent' ? 'turn' : 'round';
  const turns = new Set(items.map(item => item.name)).size;
  const calls = items.filter(
    item => item.status !== 'retry' && !/^(model|planner)(:|$)/.test(item.detail)
  ).length;
  return `${plural(turns, label)}, ${plural(calls, 'tool call')}`;
}
