/**
 * Every regular expression written in `lambdas/`: the literals (`/…/flags`) and `new RegExp('…', 'flags')` with
 * literal arguments, found with the TypeScript parser so that a `/` in a string or a comment is never taken for one.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

export interface RegexSource {
  /** `path:line` from the repository root. */
  readonly where: string;
  readonly source: string;
  readonly flags: string;
}

function* typeScriptFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* typeScriptFiles(path);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) yield path;
  }
}

/**
 * The value of a string expression built only from literals, templates (`String.raw` too) and `const`s of the same
 * file; undefined when it depends on anything else.
 */
function constantString(file: ts.SourceFile, node: ts.Expression): string | undefined {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isParenthesizedExpression(node)) return constantString(file, node.expression);
  if (ts.isTemplateExpression(node)) {
    let text = node.head.text;
    for (const span of node.templateSpans) {
      const value = constantString(file, span.expression);
      if (value === undefined) return undefined;
      text += value + span.literal.text;
    }
    return text;
  }
  if (ts.isTaggedTemplateExpression(node) && node.tag.getText(file) === 'String.raw') {
    const template = node.template;
    if (ts.isNoSubstitutionTemplateLiteral(template)) return template.rawText;
    let text = template.head.rawText ?? '';
    for (const span of template.templateSpans) {
      const value = constantString(file, span.expression);
      if (value === undefined) return undefined;
      text += value + (span.literal.rawText ?? '');
    }
    return text;
  }
  if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) {
    const left = constantString(file, node.left);
    const right = constantString(file, node.right);
    return left === undefined || right === undefined ? undefined : left + right;
  }
  if (ts.isIdentifier(node)) {
    let value: string | undefined;
    const find = (child: ts.Node): void => {
      if (
        ts.isVariableDeclaration(child) &&
        ts.isIdentifier(child.name) &&
        child.name.text === node.text &&
        child.initializer &&
        ts.isVariableDeclarationList(child.parent) &&
        child.parent.flags & ts.NodeFlags.Const
      ) {
        value = constantString(file, child.initializer);
      }
      if (value === undefined) ts.forEachChild(child, find);
    };
    find(file);
    return value;
  }
  return undefined;
}

export function regexSources(root: string, dir = 'lambdas'): RegexSource[] {
  const found: RegexSource[] = [];
  for (const path of typeScriptFiles(join(root, dir))) {
    const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
    const where = (node: ts.Node) =>
      `${relative(root, path)}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
    const visit = (node: ts.Node): void => {
      if (ts.isRegularExpressionLiteral(node)) {
        const text = node.text;
        const end = text.lastIndexOf('/');
        found.push({ where: where(node), source: text.slice(1, end), flags: text.slice(end + 1) });
      } else if (
        ts.isNewExpression(node) &&
        ts.isIdentifier(node.expression) &&
        node.expression.text === 'RegExp' &&
        node.arguments?.[0]
      ) {
        const [pattern, flags] = node.arguments;
        const source = constantString(file, pattern);
        if (source === undefined) {
          throw new Error(`${where(node)}: new RegExp with a pattern that is not built from constants of its file`);
        }
        found.push({ where: where(node), source, flags: flags ? (constantString(file, flags) ?? '') : '' });
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return found;
}
