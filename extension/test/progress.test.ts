import { strict as assert } from 'node:assert';
import { test } from 'node:test';

import { IProgressCard, IProgressItem, cardSummary, markOf, toneOf } from '../src/progress';

function item(name: string, status: string, detail = ''): IProgressItem {
  return { name, status, detail, ms: '' };
}

function card(kind: IProgressCard['kind'], items: IProgressItem[]): IProgressCard {
  return { kind, title: '', state: 'running', items, badge: '', program: '', program_label: '', note: '' };
}

test("each status the kernel words has its tone, a run's state too", () => {
  const tones = {
    ok: ['done', 'done earlier', 'ok', 'answered', 'answer', 'valid', 'planned', 'tools'],
    running: ['running', 'trying', 'thinking', 'planning', 'retrying: the worker went away'],
    failed: ['failed', 'failed: FileNotFoundError', 'no program', 'still invalid'],
    paused: ['paused', 'interrupted', 'retry'],
    skipped: ['unavailable', 'skipped'],
    waiting: ['waiting', '', 'something new']
  };
  for (const [tone, statuses] of Object.entries(tones)) {
    assert.deepEqual(statuses.map(toneOf), statuses.map(() => tone), tone);
  }
  assert.equal(toneOf('done-ish'), 'waiting');
  assert.equal(new Set(['ok', 'running', 'failed', 'waiting', 'paused', 'skipped'].map(
    tone => markOf(tone as Parameters<typeof markOf>[0]))).size, 6);
});

test('a delegate card counts the tiers tried, not their correction steps', () => {
  const tiers = [item('templates', 'unavailable'), item('local', 'no program'),
                 item('local: cleanup', 'still invalid'), item('rules', 'answered')];
  assert.equal(cardSummary(card('delegate', tiers)), '3 tiers tried');
  assert.equal(cardSummary(card('delegate', tiers.slice(0, 1))), '1 tier tried');
});

test('a plan card counts the steps done of all', () => {
  const steps = [item('fetch', 'done'), item('lines', 'done earlier'), item('report', 'running'),
                 item('gate', 'waiting')];
  assert.equal(cardSummary(card('plan', steps)), '2 of 4 steps done');
});

test("a run-many card counts the tasks done of all, a failed task not among them", () => {
  const tasks = [item("'a.txt'", 'done', '3'), item("'b.txt'", 'failed', 'LackpyRuntimeError: no file'),
                 item("'c.txt'", 'running')];
  assert.equal(cardSummary(card('many', tasks)), '1 of 3 tasks done');
});

test("an agent card counts its turns and tool calls, not the model's lines or retries", () => {
  const turns = [item('turn 1', 'tools', 'model: Let me read it.'),
                 item('turn 1', 'ok', "read_file(path='notes.txt')"),
                 item('turn 1', 'failed: FileNotFoundError', "read_file(path='x')"),
                 item('turn 2', 'retry', 'answer again: bad json'),
                 item('turn 2', 'answer', 'model: 3 lines')];
  assert.equal(cardSummary(card('agent', turns)), '2 turns, 2 tool calls');
  const rounds = [item('round 1', 'planned', 'planner: read'), item('round 1', 'ok', 'read_file()')];
  assert.equal(cardSummary(card('replan', rounds)), '1 round, 1 tool call');
});
