// What a reader must open to follow the functions that ran, found with the TypeScript compiler
// API (the rule is in tools/acquire-path.ts's header).
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as ts from 'typescript';
import type { Place, RanFunction } from './coverage';

type FunctionNode =
  | ts.FunctionDeclaration
  | ts.MethodDeclaration
  | ts.ConstructorDeclaration
  | ts.GetAccessorDeclaration
  | ts.SetAccessorDeclaration
  | ts.ArrowFunction
  | ts.FunctionExpression;

/** A function that ran, or a class whose field initializers ran (V8 runs them as one function). */
export type RanNode = FunctionNode | ts.ClassLikeDeclaration;

/** A block of a function, as offsets, and how often it ran. */
type Stretch = { readonly start: number; readonly end: number; readonly count: number };

/** What ran in one measure: the functions, and the blocks of each. */
export interface Ran {
  readonly nodes: ReadonlySet<RanNode>;
  /** Once for each time the function was seen running (a measure may be cut in two), the function itself first. */
  readonly blocks: ReadonlyMap<RanNode, readonly (readonly Stretch[])[]>;
}

function isFunctionNode(node: ts.Node): node is FunctionNode {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node) ||
    ts.isArrowFunction(node) ||
    ts.isFunctionExpression(node)
  );
}

/** The TypeScript files under `dir`, specs left out. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'))
    .map((f) => join(dir, f));
}

/** The library's program, type-checked lazily: only what a question needs is checked. */
export class Reading {
  private readonly program: ts.Program;
  private readonly checker: ts.TypeChecker;
  private implementers: Map<ts.Declaration, ts.ClassLikeDeclaration[]> | undefined;
  private constructions: Map<ts.Declaration, ts.CallLikeExpression[]> | undefined;

  /** `roots`: the files to read; `inLibrary`: which of them (and of what they import) count. */
  constructor(
    roots: readonly string[],
    private readonly inLibrary: (file: string) => boolean,
    tsconfig: string,
  ) {
    const { config } = ts.readConfigFile(tsconfig, ts.sys.readFile);
    const { options } = ts.parseJsonConfigFileContent(config, ts.sys, dirname(tsconfig));
    // Only the library's own declarations are looked up: the packages it imports and the
    // standard library are left unread, which makes the program a few times quicker to build.
    const settings = { ...options, noEmit: true, noLib: true, types: [] };
    const host = ts.createCompilerHost(settings);
    const outside = (file: string): boolean => file.split(/[\\/]/).includes('node_modules');
    const fileExists = host.fileExists.bind(host);
    host.fileExists = (file) => !outside(file) && fileExists(file);
    this.program = ts.createProgram([...roots], settings, host);
    this.checker = this.program.getTypeChecker();
  }

  /** The function (or class, for its field initializers) that starts where each of `ran` does. */
  nodesOf(ran: readonly RanFunction[]): Ran {
    const nodes = new Set<RanNode>();
    const blocks = new Map<RanNode, Stretch[][]>();
    for (const fn of ran) {
      const sf = this.program.getSourceFile(fn.file);
      if (sf === undefined) continue;
      const at = (p: Place): number => sf.getPositionOfLineAndCharacter(p.line, p.column);
      const node = innermost(sf, at(fn.start));
      // No function there: code the compiler wrote (a re-export's getter), none of the file's own.
      if (node === undefined) continue;
      nodes.add(node);
      const whole = { start: node.getStart(), end: node.end, count: fn.count };
      const inner = fn.blocks.map((b) => ({ start: at(b.start), end: at(b.end), count: b.count }));
      blocks.set(node, [...(blocks.get(node) ?? []), [whole, ...inner]]);
    }
    return { nodes, blocks };
  }

  /** The file a node is in. */
  fileOf(node: ts.Node): string {
    return node.getSourceFile().fileName;
  }

  /**
   * The name a reader finds a declaration under: `Owner.member`, or its own name. A local, or a
   * function no field or constant names, goes under the function it is written in.
   */
  nameOf(node: ts.Node): string {
    if (isTypeLike(node)) return node.name?.text ?? '(anonymous)';
    if (ts.isConstructorDeclaration(node)) return `new ${node.parent.name?.text ?? '(class)'}`;
    if (isMember(node))
      return `${this.ownerOf(node)}.${ts.getNameOfDeclaration(node as ts.Declaration)?.getText() ?? ''}`;
    const named = namer(node);
    if (named !== undefined)
      return named === node ? ((node as ts.NamedDeclaration).name?.getText() ?? '') : this.nameOf(named);
    const outer = enclosingFunction(node);
    return outer ? this.nameOf(outer) : '(anonymous)';
  }

  /** The name of what a member belongs to: its class, interface or type, or the member whose type literal holds it. */
  private ownerOf(member: ts.Node): string {
    let owner: ts.Node = member.parent;
    if (ts.isConstructorDeclaration(owner)) owner = owner.parent;
    if (ts.isTypeLiteralNode(owner)) {
      const holder = owner.parent;
      return isTypeLike(holder) || isMember(holder) ? this.nameOf(holder) : '(anonymous)';
    }
    return (owner as ts.NamedDeclaration).name?.getText() ?? '(anonymous)';
  }

  /**
   * The name of a function that ran: its own, or that of the named function it is written in;
   * `(closure in X)` when X, or a function between, did not run itself (a callback a
   * constructor made, say). A class stands for its field initializers: `new X`.
   */
  ranName(node: RanNode, ran: ReadonlySet<RanNode>): string {
    if (ts.isClassLike(node)) return `new ${node.name?.text ?? '(class)'}`;
    let all = true;
    let fn: ts.Node = node;
    while (!isMember(fn) && !isTypeLike(fn) && !ts.isConstructorDeclaration(fn) && namer(fn) === undefined) {
      const outer = enclosingFunction(fn);
      if (outer === undefined) return '(anonymous)';
      fn = outer;
      all &&= ran.has(fn as RanNode);
    }
    const name = this.nameOf(fn);
    return all ? name : `(closure in ${name})`;
  }

  /**
   * The declarations a reader looks up to follow `ran`: where a called function that is a
   * field was wired, the interface a call goes through and the class behind it that ran, the
   * types of the parameters and fields used, the interfaces and base classes of the classes
   * that ran, and a ran method's decorators. Those in library files only, each with the
   * function that ran that led there first.
   */
  lookups(measured: Ran): Map<ts.Node, RanNode> {
    const found = new Map<ts.Node, RanNode>();
    const ran = measured.nodes;
    for (const fn of ran) {
      const note = (node: ts.Node): void => {
        if (this.inLibrary(this.fileOf(node)) && !found.has(node)) found.set(node, fn);
      };
      for (const decorator of ts.canHaveDecorators(fn) ? (ts.getDecorators(fn) ?? []) : []) {
        const callee = ts.isCallExpression(decorator.expression)
          ? decorator.expression.expression
          : decorator.expression;
        this.declarationsOf(callee).forEach(note);
      }
      // The application's own code is not followed: only the decorators it puts on its method.
      if (!this.inLibrary(this.fileOf(fn))) continue;
      if (!ts.isClassLike(fn)) for (const p of fn.parameters) if (p.type) this.typesIn(p.type).forEach(note);
      const cls = ts.isClassLike(fn) ? fn : classOf(fn);
      for (const clause of cls?.heritageClauses ?? []) for (const t of clause.types) this.typesIn(t).forEach(note);
      this.walkBody(fn, measured.blocks.get(fn) ?? [], (node) => {
        if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
          for (const decl of this.declarationsOf(node.expression)) {
            if (isFunctionNode(decl) || ts.isClassLike(decl)) continue; // a plain call: it ran, or it is not on the path
            const trail: ts.Node[] = [];
            if (this.leadsToRun(decl, ran, trail, new Set())) trail.forEach(note);
          }
        }
        if (ts.isPropertyAccessExpression(node) && node.expression.kind === ts.SyntaxKind.ThisKeyword) {
          for (const decl of this.declarationsOf(node)) this.fieldTypes(decl).forEach(note);
        }
      });
    }
    return found;
  }

  /**
   * The nodes of `fn`'s own code that ran: nested functions are left out (they are listed when
   * they ran), and so are the branches not taken.
   */
  private walkBody(fn: RanNode, blocks: readonly (readonly Stretch[])[], visit: (node: ts.Node) => void): void {
    const walk = (node: ts.Node): void => {
      if (node !== fn && (isFunctionNode(node) || ts.isClassLike(node))) return;
      const start = node.getStart();
      // The innermost block holding the node says whether it ran, in any of the times seen.
      const ran = (seen: readonly Stretch[]): boolean => {
        let inner: Stretch | undefined;
        for (const b of seen) if (start >= b.start && start < b.end && (!inner || b.start >= inner.start)) inner = b;
        return inner === undefined || inner.count > 0;
      };
      if (blocks.length > 0 && !blocks.some(ran)) return;
      visit(node);
      ts.forEachChild(node, walk);
    };
    if (ts.isClassLike(fn)) {
      for (const member of fn.members)
        if (ts.isPropertyDeclaration(member) && member.initializer && !isStatic(member)) walk(member.initializer);
    } else if (fn.body) {
      walk(fn.body);
    }
  }

  /**
   * Whether calling what `decl` declares runs a function that ran, and if so the declarations
   * on the way (pushed to `trail`): a field's initializer or what the constructor assigns it, a
   * constructor parameter's argument where the class is made, an interface member's class.
   */
  private leadsToRun(decl: ts.Node, ran: ReadonlySet<RanNode>, trail: ts.Node[], seen: Set<ts.Node>): boolean {
    if (seen.has(decl)) return false;
    seen.add(decl);
    let leads = false;
    if (isFunctionNode(decl)) {
      leads = ran.has(decl);
    } else if (ts.isPropertyDeclaration(decl)) {
      leads = decl.initializer
        ? this.exprLeadsToRun(decl.initializer, ran, trail, seen)
        : this.assignmentsTo(decl).some((e) => this.exprLeadsToRun(e, ran, trail, seen));
    } else if (ts.isParameter(decl)) {
      // The reader goes to where the class is made, to see what was passed in.
      for (const [site, arg] of this.argumentsFor(decl))
        if (this.exprLeadsToRun(arg, ran, trail, seen)) {
          leads = true;
          trail.push(site);
        }
    } else if (ts.isVariableDeclaration(decl) || ts.isPropertyAssignment(decl)) {
      leads = decl.initializer !== undefined && this.exprLeadsToRun(decl.initializer, ran, trail, seen);
    } else if (ts.isShorthandPropertyAssignment(decl)) {
      const value = this.checker.getShorthandAssignmentValueSymbol(decl);
      leads = (value?.declarations ?? []).some((d) => this.leadsToRun(d, ran, trail, seen));
    } else if (ts.isMethodSignature(decl) || ts.isPropertySignature(decl)) {
      for (const cls of this.implementersOf(decl.parent)) {
        const member = this.memberOf(cls, decl.name.getText());
        const inner: ts.Node[] = [];
        if (member.some((m) => this.leadsToRun(m, ran, inner, new Set(seen)))) {
          leads = true;
          trail.push(member.some((m) => m.parent === cls) ? member[0] : cls, ...inner);
        }
      }
      // A field of a function type may be filled in by any object: its interface says what it is.
      if (ts.isPropertySignature(decl)) leads = true;
    }
    if (leads) trail.push(decl);
    return leads;
  }

  private exprLeadsToRun(
    expr: ts.Expression,
    ran: ReadonlySet<RanNode>,
    trail: ts.Node[],
    seen: Set<ts.Node>,
  ): boolean {
    const e = skipOuter(expr);
    if (ts.isArrowFunction(e) || ts.isFunctionExpression(e)) return ran.has(e);
    if (ts.isConditionalExpression(e))
      return [e.whenTrue, e.whenFalse].some((branch) => this.exprLeadsToRun(branch, ran, trail, seen));
    if (ts.isCallExpression(e) && ts.isPropertyAccessExpression(e.expression) && e.expression.name.text === 'bind')
      return this.exprLeadsToRun(e.expression.expression, ran, trail, seen);
    if (!ts.isIdentifier(e) && !ts.isPropertyAccessExpression(e)) return false;
    const leads = this.declarationsOf(e).some((d) => this.leadsToRun(d, ran, trail, seen));
    // `parts.calls.run`: the reader looks up `calls` too, on the way to `run`.
    if (leads)
      for (let r: ts.Expression = e; ts.isPropertyAccessExpression(r); r = r.expression)
        if (r !== e) for (const d of this.declarationsOf(r)) if (isMember(d)) trail.push(d);
    return leads;
  }

  /** The declarations a name (or `a.b`'s `b`) refers to, through imports. */
  private declarationsOf(expr: ts.Expression): ts.Node[] {
    const at = ts.isPropertyAccessExpression(expr) ? expr.name : expr;
    let symbol = this.checker.getSymbolAtLocation(at);
    if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = this.checker.getAliasedSymbol(symbol);
    return symbol?.declarations ?? [];
  }

  /** The library's interfaces, classes, type aliases and enums a type names. */
  private typesIn(type: ts.Node): ts.Node[] {
    const out: ts.Node[] = [];
    const walk = (node: ts.Node): void => {
      const name = ts.isTypeReferenceNode(node)
        ? node.typeName
        : ts.isExpressionWithTypeArguments(node)
          ? node.expression
          : ts.isTypeQueryNode(node)
            ? node.exprName
            : undefined;
      if (name) {
        const at = ts.isQualifiedName(name) ? name.right : name;
        let symbol = this.checker.getSymbolAtLocation(at);
        if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = this.checker.getAliasedSymbol(symbol);
        for (const d of symbol?.declarations ?? [])
          if (
            ts.isInterfaceDeclaration(d) ||
            ts.isTypeAliasDeclaration(d) ||
            ts.isClassDeclaration(d) ||
            ts.isEnumDeclaration(d)
          )
            out.push(d);
      }
      ts.forEachChild(node, walk);
    };
    walk(type);
    return out;
  }

  /** The types a field is declared with, or the class it is made from. */
  private fieldTypes(decl: ts.Node): ts.Node[] {
    if (!ts.isPropertyDeclaration(decl) && !ts.isParameter(decl)) return [];
    if (decl.type) return this.typesIn(decl.type);
    const init = decl.initializer && skipOuter(decl.initializer);
    if (init && ts.isNewExpression(init)) return this.declarationsOf(init.expression).filter((d) => ts.isClassLike(d));
    return [];
  }

  /** What the constructor (or a method) of the field's class assigns to `this.<field>`. */
  private assignmentsTo(field: ts.PropertyDeclaration): ts.Expression[] {
    const name = field.name.getText();
    const out: ts.Expression[] = [];
    const walk = (node: ts.Node): void => {
      if (
        ts.isBinaryExpression(node) &&
        node.operatorToken.kind === ts.SyntaxKind.EqualsToken &&
        ts.isPropertyAccessExpression(node.left) &&
        node.left.expression.kind === ts.SyntaxKind.ThisKeyword &&
        node.left.name.text === name
      )
        out.push(node.right);
      ts.forEachChild(node, walk);
    };
    for (const member of field.parent.members) if (!ts.isPropertyDeclaration(member)) walk(member);
    return out;
  }

  /** The arguments given for a constructor's parameter, wherever the class is made (or its subclass calls super). */
  private argumentsFor(param: ts.ParameterDeclaration): [ts.Node, ts.Expression][] {
    const ctor = param.parent;
    if (!ts.isConstructorDeclaration(ctor)) return [];
    const index = ctor.parameters.indexOf(param);
    const out: [ts.Node, ts.Expression][] = [];
    for (const site of this.constructionsOf().get(ctor.parent) ?? []) {
      const arg = (site as ts.NewExpression | ts.CallExpression).arguments?.[index];
      if (arg !== undefined && !ts.isSpreadElement(arg)) out.push([site, arg]);
    }
    return out;
  }

  /** Every `new C(...)` and `super(...)` in the program's library files, by class. */
  private constructionsOf(): Map<ts.Declaration, ts.CallLikeExpression[]> {
    if (this.constructions) return this.constructions;
    const sites = new Map<ts.Declaration, ts.CallLikeExpression[]>();
    const add = (cls: ts.Node | undefined, site: ts.CallLikeExpression): void => {
      if (!cls || !ts.isClassLike(cls)) return;
      sites.set(cls, [...(sites.get(cls) ?? []), site]);
    };
    this.eachLibraryNode((node) => {
      if (ts.isNewExpression(node)) for (const d of this.declarationsOf(node.expression)) add(d, node);
      if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.SuperKeyword) {
        const cls = classOf(node);
        const base = cls?.heritageClauses?.find((c) => c.token === ts.SyntaxKind.ExtendsKeyword)?.types[0];
        if (base) for (const d of this.declarationsOf(base.expression)) add(d, node);
      }
    });
    return (this.constructions = sites);
  }

  /** The library's classes that implement the interface `container` (directly, or through a base or an extended interface). */
  private implementersOf(container: ts.Node): ts.ClassLikeDeclaration[] {
    if (!this.implementers) {
      const map = new Map<ts.Declaration, ts.ClassLikeDeclaration[]>();
      this.eachLibraryNode((node) => {
        if (!ts.isClassDeclaration(node)) return;
        for (const iface of this.interfacesOf(node, new Set())) map.set(iface, [...(map.get(iface) ?? []), node]);
      });
      this.implementers = map;
    }
    return this.implementers.get(container as ts.Declaration) ?? [];
  }

  private interfacesOf(node: ts.ClassLikeDeclaration | ts.InterfaceDeclaration, seen: Set<ts.Node>): ts.Declaration[] {
    if (seen.has(node)) return [];
    seen.add(node);
    const out: ts.Declaration[] = [];
    for (const clause of node.heritageClauses ?? [])
      for (const t of clause.types)
        for (const d of this.declarationsOf(t.expression)) {
          if (ts.isInterfaceDeclaration(d)) out.push(d, ...this.interfacesOf(d, seen));
          else if (ts.isClassLike(d)) out.push(...this.interfacesOf(d, seen));
        }
    return out;
  }

  /** The declarations of a class's member `name`, its own or inherited. */
  private memberOf(cls: ts.ClassLikeDeclaration, name: string): ts.Node[] {
    const symbol = cls.name && this.checker.getSymbolAtLocation(cls.name);
    if (!symbol) return [];
    const member = this.checker.getDeclaredTypeOfSymbol(symbol).getProperty(name);
    return member?.declarations ?? [];
  }

  private eachLibraryNode(visit: (node: ts.Node) => void): void {
    const walk = (node: ts.Node): void => {
      visit(node);
      ts.forEachChild(node, walk);
    };
    for (const sf of this.program.getSourceFiles()) if (this.inLibrary(sf.fileName)) walk(sf);
  }
}

/** The innermost function (or class) whose text holds `pos`. */
function innermost(sf: ts.SourceFile, pos: number): RanNode | undefined {
  let found: RanNode | undefined;
  const visit = (node: ts.Node): void => {
    if (pos < node.getStart(sf) || pos >= node.end) return;
    if (isFunctionNode(node) || ts.isClassLike(node)) found = node;
    ts.forEachChild(node, visit);
  };
  ts.forEachChild(sf, visit);
  return found;
}

function enclosingFunction(node: ts.Node): FunctionNode | undefined {
  for (let p = node.parent as ts.Node | undefined; p; p = p.parent) if (isFunctionNode(p)) return p;
  return undefined;
}

/**
 * What gives `node` its name, if it has one of its own: itself (a function declaration, or a
 * constant outside any function), or the class field or constant a function is assigned to.
 */
function namer(node: ts.Node): ts.Node | undefined {
  if (ts.isFunctionDeclaration(node) && node.name) return node;
  if (ts.isVariableDeclaration(node) && enclosingFunction(node) === undefined) return node;
  const parent = node.parent as ts.Node | undefined;
  if ((ts.isArrowFunction(node) || ts.isFunctionExpression(node)) && parent) {
    if (ts.isPropertyDeclaration(parent) && parent.initializer === node) return parent;
    if (ts.isVariableDeclaration(parent) && parent.initializer === node && enclosingFunction(parent) === undefined)
      return parent;
  }
  return undefined;
}

function isTypeLike(
  node: ts.Node,
): node is ts.ClassLikeDeclaration | ts.InterfaceDeclaration | ts.TypeAliasDeclaration | ts.EnumDeclaration {
  return (
    ts.isClassLike(node) ||
    ts.isInterfaceDeclaration(node) ||
    ts.isTypeAliasDeclaration(node) ||
    ts.isEnumDeclaration(node)
  );
}

function classOf(node: ts.Node): ts.ClassLikeDeclaration | undefined {
  for (let p = node.parent as ts.Node | undefined; p; p = p.parent) if (ts.isClassLike(p)) return p;
  return undefined;
}

function isMember(node: ts.Node): boolean {
  return (
    ts.isClassElement(node) ||
    ts.isTypeElement(node) ||
    (ts.isParameter(node) && ts.isConstructorDeclaration(node.parent) && ts.getModifiers(node) !== undefined)
  );
}

function isStatic(member: ts.ClassElement): boolean {
  return (ts.getModifiers(member as ts.HasModifiers) ?? []).some((m) => m.kind === ts.SyntaxKind.StaticKeyword);
}

function skipOuter(expr: ts.Expression): ts.Expression {
  let e = expr;
  while (
    ts.isParenthesizedExpression(e) ||
    ts.isAsExpression(e) ||
    ts.isNonNullExpression(e) ||
    ts.isSatisfiesExpression(e)
  )
    e = e.expression;
  return e;
}
