import { strict as assert } from 'node:assert';
import { test } from 'node:test';

import { delegateCell, languageOf, namesFromReply, rangeOf } from '../src/logic';
import { sortRows } from '../src/trace';
import { changeSummary, fileCounts, lineKind } from '../src/change';

test('every cell of a lackpy notebook is lackpy', () => {
  assert.equal(languageOf('lackpy', "read_file('x')"), 'lackpy');
  assert.equal(languageOf('lackpy', '%kit debug'), 'lackpy');
});

test("only a Python notebook's %%lackpy cells are checked", () => {
  assert.equal(languageOf('python', '%%lackpy --kit debug\nx'), 'python');
  assert.equal(languageOf('python', '%%lackpy'), 'python');
  assert.equal(languageOf('python', 'import os'), null);
  assert.equal(languageOf('python', '%%lackpyish\nx'), null);
  assert.equal(languageOf('r', '%%lackpy\nx'), null);
});

test("the kernel's names are read from the reply's metadata, else null", () => {
  assert.deepEqual(
    namesFromReply({ lackpy: { names: ['a', 'read_file'], tools: ['read_file'] } }),
    { names: ['a', 'read_file'], tools: ['read_file'] }
  );
  assert.equal(namesFromReply({}), null);
  assert.equal(namesFromReply(undefined), null);
  assert.equal(namesFromReply({ lackpy: { names: [1], tools: [] } }), null);
});

test('a problem lies at its line and column, end excluded', () => {
  const text = "x = 1\nopen('x')";
  const range = rangeOf(text, { line: 2, col: 1, end_line: 2, end_col: 5, message: '' });
  assert.equal(text.slice(range.from, range.to), 'open');
});

test('a place outside the text is kept within it', () => {
  const text = 'ab\ncd';
  assert.deepEqual(
    rangeOf(text, { line: 9, col: 9, end_line: 9, end_col: 12, message: '' }),
    { from: 5, to: 5 }
  );
  assert.deepEqual(
    rangeOf(text, { line: 1, col: 2, end_line: 1, end_col: 1, message: '' }),
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
  assert.equal(changeSummary(change), '2 files changed: +2 -1');
  assert.equal(fileCounts(change.files[0]), '+2 -1');
  assert.equal(fileCounts(change.files[1]), '');
  assert.deepEqual(['@@ -1 +1 @@', '+new', '-old', ' same', ''].map(lineKind),
                   ['hunk', 'added', 'removed', 'context', 'context']);
});

test('an intent becomes one %delegate line, its spaces and newlines folded', () => {
  assert.equal(delegateCell('  count the\n notes  '), '%delegate count the notes');
});
