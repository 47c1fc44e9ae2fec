import { strict as assert } from 'node:assert';
import { test } from 'node:test';

import * as changes from '../src/change';
import * as logic from '../src/logic';
import { sortRows } from '../src/trace';

test('every cell of a lackpy notebook is lackpy', () => {
  assert.equal(logic.languageOf('lackpy', "read_file('x')"), 'lackpy');
  assert.equal(logic.languageOf('lackpy', '%kit debug'), 'lackpy');
});

test("only a Python notebook's %%lackpy, %%step and %%validate cells are checked", () => {
  assert.equal(logic.languageOf('python', '%%lackpy --kit debug\nx'), 'python');
  assert.equal(logic.languageOf('python', '%%lackpy'), 'python');
  assert.equal(logic.languageOf('python', '%%step fetch\nread_file(task)'), 'python');
  assert.equal(logic.languageOf('python', '%%validate\nx'), 'python');
  assert.equal(logic.languageOf('python', '%%timeit\nx'), null);
  assert.equal(logic.languageOf('python', 'import os'), null);
  assert.equal(logic.languageOf('python', '%%lackpyish\nx'), null);
  assert.equal(logic.languageOf('r', '%%lackpy\nx'), null);
});

test("the kernel's names are read from the reply's metadata, else null", () => {
  assert.deepEqual(
    logic.namesFromReply({ lackpy: { names: ['a', 'read_file'], tools: ['read_file'] } }),
    { names: ['a', 'read_file'], tools: ['read_file'] }
  );
  assert.equal(logic.namesFromReply({}), null);
  assert.equal(logic.namesFromReply(undefined), null);
  assert.equal(logic.namesFromReply({ lackpy: { names: [1], tools: [] } }), null);
});

test('a problem lies at its line and column, end excluded', () => {
  const text = "x = 1\nopen('x')";
  const range = logic.rangeOf(text, { line: 2, col: 1, end_line: 2, end_col: 5, message: '' });
  assert.equal(text.slice(range.from, range.to), 'open');
});

test('a place outside the text is kept within it', () => {
  const text = 'ab\ncd';
  assert.deepEqual(
    logic.rangeOf(text, { line: 9, col: 9, end_line: 9, end_col: 12, message: '' }),
    { from: 5, to: 5 }
  );
  assert.deepEqual(
    logic.rangeOf(text, { line: 1, col: 2, end_line: 1, end_col: 1, message: '' }),
    { from: 1, to: 1 }
  );
});

test('a trace sorts by a number column as numbers and by text as text', () => {
  const rows = [['1', 'read_file', '12.5'], ['2', 'find_files', '3.0'], ['3', 'b', '100.0']];
  assert.deepEqual(sortRows(rows, 2, true, false).map(r => r[0]), ['2', '1', '3']);
  assert.deepEqual(sortRows(rows, 2, true, true).map(r => r[0]), ['3', '1', '2']);
  assert.deepEqual(sortRows(rows, 1, false, false).map(r => r[1]), ['b', 'find_files', 'read_file']);
});

test("a change reads as the kernel's text: its summary, each file's counts, each line's kind", () => {
  const change = {
    files: [
      { path: 'a.txt', status: 'changed', added: 2, removed: 1, lines: [], omitted: 0, note: '' },
      { path: 'b.bin', status: 'new', added: 0, removed: 0, lines: [], omitted: 0, note: 'binary' }
    ]
  };
  assert.equal(changes.changeSummary(change), '2 files changed: +2 -1');
  assert.equal(changes.fileCounts(change.files[0]), '+2 -1');
  assert.equal(changes.fileCounts(change.files[1]), '');
  assert.deepEqual(['@@ -1 +1 @@', '+new', '-old', ' same', ''].map(changes.lineKind),
                   ['hunk', 'added', 'removed', 'context', 'context']);
});

test('a call-only change asks "Call NAME(ARGS)?" and says why; a change of files has no call', () => {
  const call = { name: 'post', arguments: "'/tmp/out.txt', '<img src=x onerror=alert(1)>'" };
  const asked: changes.IChange = { files: [], call };
  assert.deepEqual(changes.callOf(asked), call);
  assert.equal(changes.callQuestion(call), "Call post('/tmp/out.txt', '<img src=x onerror=alert(1)>')?");
  assert.equal(changes.callReason(call), "post acts beyond the workspace's files (a tool graded write " +
               'that runs in the kernel), so it runs only if you allow this call');
  assert.equal(changes.callOf({ files: [] }), null);
});

test("the kernel's stdin question about a change is matched by how it begins", () => {
  const call = { name: 'post', arguments: "'/tmp/out.txt', 'hi'" };
  assert.equal(changes.questionOf({ files: [], call }), 'Call post?');
  assert.equal(changes.questionOf({ files: [] }), 'Apply these changes?');
  assert.equal(changes.questionOf({ files: [], call: { name: 'post' } } as unknown as changes.IChange),
               'Apply these changes?');
});

test('a call of the wrong shape is no call', () => {
  for (const call of [null, 'post()', { name: 'post' }, { name: 'post', arguments: 3 },
                      { name: ['post'], arguments: '' }]) {
    assert.equal(changes.callOf({ files: [], call } as unknown as changes.IChange), null, JSON.stringify(call));
  }
});

test('an intent becomes one %delegate line, its spaces and newlines folded', () => {
  assert.equal(logic.delegateCell('  count the\n notes  '), '%delegate count the notes');
});

test("the kit is read from the reply's metadata, else null", () => {
  const said = { lackpy: { names: [], tools: ['read_file'], kit: 'debug', grade: { w: 1, d: 1 } } };
  assert.deepEqual(logic.kitFromReply(said), { kit: 'debug', grade: { w: 1, d: 1 }, tools: ['read_file'] });
  assert.equal(logic.kitFromReply({ lackpy: { names: [], tools: [] } }), null); // an older kernel
  assert.equal(logic.kitFromReply({ lackpy: { kit: 'x', tools: [], grade: { w: '1', d: 1 } } }), null);
  assert.equal(logic.kitFromReply(undefined), null);
});

test('the status bar names the kit and its grade in auto_run words; the tooltip lists the tools', () => {
  const shown = logic.kitStatus({ kit: 'debug', grade: { w: 1, d: 1 }, tools: ['find_files', 'read_file'] });
  assert.equal(shown.text, 'lackpy kit: debug \u00b7 read');
  assert.equal(shown.title,
    'kit debug, grade w=1 (read) d=1; 2 tools: find_files, read_file. %kit NAME changes it');
  const long = logic.kitStatus({ kit: 'read_file,write_file,find_files,edit_file', grade: { w: 3, d: 3 },
                           tools: [] });
  assert.equal(long.text, 'lackpy kit: read_file,write_file,find_files\u2026 \u00b7 write');
  assert.match(long.title, /0 tools: none/);
});

test('delegate is offered in lackpy notebooks and in Python notebooks that load lackpy', () => {
  assert.equal(logic.delegateOffered('lackpy', []), true);
  assert.equal(logic.delegateOffered('python', ['import os', '%load_ext lackpy_kernel']), true);
  assert.equal(logic.delegateOffered('python', ['x = 1\n%load_ext lackpy_kernel.extension\n']), true);
  assert.equal(logic.delegateOffered('python', ['%load_ext lackpy_kernelish']), false);
  assert.equal(logic.delegateOffered('python', []), false);
  assert.equal(logic.delegateOffered('r', ['%load_ext lackpy_kernel']), false);
});
