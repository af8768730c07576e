/**
 * A JSON editor: CodeMirror 6 with the JSON language, its syntax errors underlined as you type, and the problems the
 * API's validation found (each with its field path) listed as diagnostics at the value they name.
 */
import { json, jsonParseLinter } from '@codemirror/lang-json';
import { ensureSyntaxTree } from '@codemirror/language';
import { type Diagnostic, linter, setDiagnostics } from '@codemirror/lint';
import type { EditorState } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import type { SyntaxNode } from '@lezer/common';
import { basicSetup } from 'codemirror';
import { useEffect, useRef } from 'react';

export interface FieldProblem {
  readonly field: string;
  readonly rule: string;
  readonly message?: string;
}

/**
 * Where a dotted field path (`flows.0.nodes.2.prompt`) is in the text: the span of the value it names, found by
 * walking the JSON syntax tree (object properties by name, array items by index); as deep as the path resolves.
 */
function spanOf(state: EditorState, field: string): { from: number; to: number } {
  const tree = ensureSyntaxTree(state, state.doc.length, 200);
  let node: SyntaxNode | null = tree?.topNode.firstChild ?? null;
  let span = { from: 0, to: 0 };
  for (const part of field.split('.').filter(Boolean)) {
    if (!node) break;
    span = { from: node.from, to: node.to };
    const children: SyntaxNode[] = [];
    for (let child = node.firstChild; child; child = child.nextSibling) children.push(child);
    if (node.name === 'Object') {
      const property = children.find((child) => {
        const key = child.name === 'Property' ? child.getChild('PropertyName') : null;
        return key !== null && state.sliceDoc(key.from, key.to) === JSON.stringify(part);
      });
      node = property?.lastChild ?? null;
    } else if (node.name === 'Array') {
      const items = children.filter((child) => !['[', ']', ','].includes(child.name) && !child.type.isError);
      node = items[Number(part)] ?? null;
    } else node = null;
  }
  return node ? { from: node.from, to: node.to } : span;
}

export function JsonEditor({
  value,
  onChange,
  label,
  problems = [],
  reveal,
}: {
  value: string;
  onChange: (value: string) => void;
  label: string;
  problems?: readonly FieldProblem[];
  /** A field path to show: the text of the value it names is selected and scrolled into view (not focused). */
  reveal?: string;
}) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const change = useRef(onChange);
  change.current = onChange;

  // biome-ignore lint/correctness/useExhaustiveDependencies: made once per label; later values arrive through the effect below
  useEffect(() => {
    if (!host.current) return;
    const editor = new EditorView({
      doc: value,
      parent: host.current,
      extensions: [
        basicSetup,
        json(),
        linter(jsonParseLinter()),
        EditorView.contentAttributes.of({ 'aria-label': label }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) change.current(update.state.doc.toString());
        }),
        EditorView.theme({ '&': { maxHeight: '560px', fontSize: '13px' }, '.cm-scroller': { overflow: 'auto' } }),
      ],
    });
    // The scroller is a scrollable region: keyboard users reach it too (axe's scrollable-region-focusable).
    editor.scrollDOM.tabIndex = 0;
    view.current = editor;
    return () => editor.destroy();
  }, [label]);

  // A value set from outside (a load, another environment) replaces the text; the editor's own edits do not loop.
  useEffect(() => {
    const editor = view.current;
    if (!editor || editor.state.doc.toString() === value) return;
    editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: value } });
  }, [value]);

  useEffect(() => {
    const editor = view.current;
    if (!editor) return;
    const diagnostics: Diagnostic[] = problems.map((problem) => ({
      ...spanOf(editor.state, problem.field),
      severity: 'error',
      message: `${problem.field}: ${problem.rule}${problem.message ? `: ${problem.message}` : ''}`,
    }));
    editor.dispatch(setDiagnostics(editor.state, diagnostics));
  }, [problems]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: revealed when the path changes, and when the text does under it
  useEffect(() => {
    const editor = view.current;
    if (!editor || !reveal) return;
    const span = spanOf(editor.state, reveal);
    if (span.to <= span.from) return;
    editor.dispatch({ selection: { anchor: span.from, head: span.to } });
    // Within the editor's own scroller only: the page stays where the person is (the canvas, above).
    editor.requestMeasure({
      read: () => editor.lineBlockAt(span.from).top,
      write: (top) => {
        editor.scrollDOM.scrollTop = Math.max(0, top - 20);
      },
    });
  }, [reveal, value]);

  return <div ref={host} style={{ border: '1px solid var(--mantine-color-gray-4)', borderRadius: 4 }} />;
}
