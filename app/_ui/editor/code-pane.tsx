'use client';
import Editor, { type OnMount } from '@monaco-editor/react';
import { useEffect, useRef } from 'react';
import { useEffectiveTheme } from '../theme';
import type { EditorProblem } from './markers';
import type { Monaco } from './monaco-setup';

type CodeEditor = Parameters<OnMount>[0];

const MODEL_ROOT = 'file:///env/';
const languageOf = (file: string) => (file.endsWith('.json') ? 'json' : file.endsWith('.md') ? 'markdown' : 'typescript');

/**
 * The Monaco editor over the environment's files: one model per file (so imports between them
 * type-check), markers from the last save, Ctrl/Cmd-S to save and Ctrl/Cmd-P to open a file.
 */
export function CodePane({
  monaco,
  files,
  file,
  problems,
  readOnly,
  onChange,
  onSave,
  onQuickOpen,
  reveal,
}: {
  monaco: Monaco;
  files: Record<string, string>;
  file: string;
  problems: EditorProblem[];
  readOnly: boolean;
  onChange: (file: string, text: string) => void;
  onSave: () => void;
  onQuickOpen: () => void;
  /** A position to show (a problem clicked in a list); a new object each time. */
  reveal: { line: number; column: number } | null;
}) {
  const theme = useEffectiveTheme();
  const editorRef = useRef<CodeEditor | null>(null);
  const actions = useRef({ onSave, onQuickOpen });
  actions.current = { onSave, onQuickOpen };

  // Every file has a model (created before the editor shows one), so `import './board'` resolves.
  useEffect(() => {
    for (const [path, text] of Object.entries(files)) {
      const uri = monaco.Uri.parse(MODEL_ROOT + path);
      const model = monaco.editor.getModel(uri);
      if (!model) monaco.editor.createModel(text, languageOf(path), uri);
      else if (model.getValue() !== text && editorRef.current?.getModel() !== model) model.setValue(text);
    }
    for (const model of monaco.editor.getModels()) {
      const path = model.uri.toString().startsWith(MODEL_ROOT) ? model.uri.toString().slice(MODEL_ROOT.length) : null;
      if (path !== null && !(path in files)) model.dispose();
    }
  }, [monaco, files]);

  // The server's findings as markers (the TypeScript worker's own markers stay under their owner).
  useEffect(() => {
    const byFile = new Map<string, EditorProblem[]>();
    for (const p of problems) byFile.set(p.file, [...(byFile.get(p.file) ?? []), p]);
    for (const model of monaco.editor.getModels()) {
      const uri = model.uri.toString();
      if (!uri.startsWith(MODEL_ROOT)) continue;
      const list = byFile.get(uri.slice(MODEL_ROOT.length)) ?? [];
      monaco.editor.setModelMarkers(
        model,
        'whetstone',
        list.map((p) => ({
          severity: p.severity === 'error' ? monaco.MarkerSeverity.Error : monaco.MarkerSeverity.Warning,
          message: p.message,
          source: p.source,
          startLineNumber: p.line,
          startColumn: p.column,
          endLineNumber: p.line,
          endColumn: Math.max(p.column + 1, model.getLineMaxColumn(Math.min(p.line, model.getLineCount()))),
        })),
      );
    }
  }, [monaco, problems, files]);

  useEffect(() => {
    const editor = editorRef.current;
    if (!editor || !reveal) return;
    editor.revealLineInCenter(reveal.line);
    editor.setPosition({ lineNumber: reveal.line, column: reveal.column });
    editor.focus();
  }, [reveal]);

  return (
    <Editor
      path={MODEL_ROOT + file}
      defaultLanguage={languageOf(file)}
      value={files[file] ?? ''}
      theme={theme === 'dark' ? 'vs-dark' : 'vs'}
      loading={<p className="muted editor-loading">Loading the editor…</p>}
      onChange={(text) => onChange(file, text ?? '')}
      onMount={(editor) => {
        editorRef.current = editor;
        editor.addCommand(monaco.KeyMod.CtrlCmd | monaco.KeyCode.KeyS, () => actions.current.onSave());
        editor.addCommand(monaco.KeyMod.CtrlCmd | monaco.KeyCode.KeyP, () => actions.current.onQuickOpen());
        editor.focus();
      }}
      options={{
        readOnly,
        automaticLayout: true,
        fontSize: 13.5,
        minimap: { enabled: false },
        scrollBeyondLastLine: false,
        // 'dimmed' draws the last line's number at reduced opacity, below WCAG contrast.
        renderFinalNewline: 'on',
        tabSize: 2,
        renderWhitespace: 'selection',
        fixedOverflowWidgets: true,
        'semanticHighlighting.enabled': true,
      }}
    />
  );
}
