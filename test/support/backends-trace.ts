/**
 * Follows the backends (infra/backends.ts) from one function of a job through every call that passes
 * them on, read by the TypeScript checker: a call passes them on when an argument is the `Backends`,
 * what holds them whole (a `Stage`, a `Run`, its `RunState`), one of their members (the store, the
 * logs, the warehouse, the items, the catalog, the episode catalog, a rollup engine), or an object
 * literal with one of those in it. An owner that was handed the store once and keeps it to itself
 * (the ledger, the quarantine, the publisher, the lister) does not count when it is passed on: it
 * offers whole operations, not the store. A call of an interface's method is
 * followed into every class that says it implements it. What it returns: each such call that crosses
 * between top-level folders, and whether it climbs (into a folder above the caller's: LAYERS).
 */
import { join, relative } from 'node:path';
import ts from 'typescript';

/** The top-level folders from the bottom up: a folder may import those below it only. */
export const LAYERS = ['lib', 'datasets', 'state', 'ingest', 'rollup', 'export', 'infra', 'jobs', 'cli'];

export interface Crossing {
  /** `file:function` of the caller and of the callee. */
  from: string;
  to: string;
  /** `file:line` of the call. */
  at: string;
  /** What of the backends it passes (`Backends.store`, `{source}:Backends.logs`, `Stage`). */
  passed: string[];
  climbs: boolean;
}

export function traceBackends(root: string, start: { file: string; fn: string }): { crossings: Crossing[]; reached: string[] } {
  const parsed = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })!;
  // The product's own files, by their path in the project (a clone may live under a folder named test).
  const own = (f: string): boolean => f.startsWith(root) && !f.endsWith('.d.ts') && !/(^|\/)(node_modules|test|bench|tools)\//.test(relative(root, f));
  const program = ts.createProgram(parsed.fileNames.filter(own), { ...parsed.options, incremental: false, noEmit: true });
  const checker = program.getTypeChecker();
  const rel = (f: string): string => relative(root, f);
  const folder = (f: string): string => rel(f).split('/')[0]!;
  const interfaceIn = (file: string, name: string): ts.Type | undefined => {
    let found: ts.Type | undefined;
    const source = program.getSourceFile(join(root, file));
    if (source) ts.forEachChild(source, (n) => { if ((ts.isInterfaceDeclaration(n) || ts.isClassDeclaration(n)) && n.name?.text === name) found = checker.getTypeAtLocation(n); });
    return found;
  };
  const backends = interfaceIn('infra/backends.ts', 'Backends');
  if (!backends) throw new Error('no interface Backends in infra/backends.ts');
  // What holds them whole and hands them on too: a stage, a run (its state and publisher hold the
  // store), the run's state. (A checkout from before one of these traces without it.)
  const holders: Array<[string, string]> = [['jobs/stages/stage.ts', 'Stage'], ['jobs/run.ts', 'Run'], ['state/run-state.ts', 'RunState']];
  const carriers: Array<[string, ts.Type]> = [['Backends', backends]];
  for (const [file, name] of holders) {
    const t = interfaceIn(file, name);
    if (t) carriers.push([name, t]);
  }
  for (const p of backends.getProperties()) {
    let t = checker.getNonNullableType(checker.getTypeOfSymbol(p));
    const call = t.getCallSignatures()[0];
    if (call) t = call.getReturnType();
    carriers.push([`Backends.${p.name}`, t]);
  }
  const carrierOf = (type: ts.Type): string | null => {
    const t = checker.getNonNullableType(type);
    if (t.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown | ts.TypeFlags.Never)) return null;
    if (t.isUnion()) return t.types.map(carrierOf).find((c) => c !== null) ?? null;
    for (const [name, c] of carriers) if (t === c || (t.getProperties().length >= 2 && checker.isTypeAssignableTo(t, c))) return name;
    return null;
  };
  const passedIn = (args: readonly ts.Expression[]): string[] => args.flatMap((a) => {
    const c = carrierOf(checker.getTypeAtLocation(a));
    if (c) return [c];
    if (!ts.isObjectLiteralExpression(a)) return [];
    return a.properties.flatMap((p) => {
      const v = ts.isPropertyAssignment(p) ? p.initializer : ts.isShorthandPropertyAssignment(p) ? p.name : null;
      const cc = v && carrierOf(checker.getTypeAtLocation(v));
      return cc ? [`{${p.name!.getText()}}:${cc}`] : [];
    });
  });
  // The classes that say they implement an interface, by the interface's name.
  const implementers = new Map<string, ts.ClassDeclaration[]>();
  for (const f of program.getSourceFiles()) {
    if (!own(f.fileName)) continue;
    const visit = (n: ts.Node): void => {
      if (ts.isClassDeclaration(n)) for (const h of n.heritageClauses ?? []) for (const x of h.types) implementers.set(x.expression.getText(), [...(implementers.get(x.expression.getText()) ?? []), n]);
      ts.forEachChild(n, visit);
    };
    visit(f);
  }
  const callees = (call: ts.CallExpression | ts.NewExpression): ts.Node[] => {
    const at = ts.isPropertyAccessExpression(call.expression) ? call.expression.name : call.expression;
    let s = checker.getSymbolAtLocation(at);
    if (!s) return [];
    if (s.flags & ts.SymbolFlags.Alias) s = checker.getAliasedSymbol(s);
    return (s.declarations ?? []).filter((d) => own(d.getSourceFile().fileName)).flatMap((d): ts.Node[] => {
      if ((ts.isMethodSignature(d) || ts.isPropertySignature(d)) && ts.isInterfaceDeclaration(d.parent)) {
        return (implementers.get(d.parent.name.text) ?? []).flatMap((c) => c.members.filter((m) => m.name?.getText() === d.name.getText()));
      }
      if (ts.isClassDeclaration(d)) return d.members.filter(ts.isConstructorDeclaration);
      return [d];
    });
  };
  const nameOf = (d: ts.Node): string => {
    const n = ts.isConstructorDeclaration(d) ? 'constructor' : (d as ts.NamedDeclaration).name?.getText() ?? '<function>';
    return ts.isClassDeclaration(d.parent) && d.parent.name ? `${d.parent.name.text}.${n}` : n;
  };
  let first: ts.FunctionDeclaration | undefined;
  ts.forEachChild(program.getSourceFile(join(root, start.file))!, (n) => { if (ts.isFunctionDeclaration(n) && n.name?.text === start.fn) first = n; });
  if (!first) throw new Error(`no function ${start.fn} in ${start.file}`);
  const queue: ts.Node[] = [first];
  const seen = new Set<ts.Node>(queue);
  const crossings: Crossing[] = [];
  const reached: string[] = [];
  while (queue.length) {
    const fn = queue.shift()!;
    const body = (fn as ts.FunctionLikeDeclaration).body ?? (ts.isPropertyDeclaration(fn) ? fn.initializer : undefined);
    if (!body) continue;
    const file = fn.getSourceFile();
    reached.push(`${rel(file.fileName)}:${nameOf(fn)}`);
    const visit = (n: ts.Node): void => {
      if ((ts.isCallExpression(n) || ts.isNewExpression(n)) && n.arguments) {
        const passed = passedIn(n.arguments);
        if (passed.length) {
          for (const d of callees(n)) {
            const to = d.getSourceFile().fileName;
            if (folder(to) !== folder(file.fileName)) {
              crossings.push({
                from: `${rel(file.fileName)}:${nameOf(fn)}`, to: `${rel(to)}:${nameOf(d)}`, at: `${rel(file.fileName)}:${file.getLineAndCharacterOfPosition(n.getStart()).line + 1}`,
                passed, climbs: LAYERS.indexOf(folder(to)) > LAYERS.indexOf(folder(file.fileName)),
              });
            }
            if (!seen.has(d)) { seen.add(d); queue.push(d); }
          }
        }
      }
      ts.forEachChild(n, visit);
    };
    visit(body);
  }
  return { crossings, reached };
}
