import { type PlaceholderScope, placeholdersIn, renderText, renderValue } from '#core/flows/placeholders';

const scope: PlaceholderScope = {
  memory: {
    name: 'Ada',
    empty: '',
    count: 3,
    zero: 0,
    yes: true,
    no: false,
    nothing: null,
    notSet: undefined,
    user: { profile: { city: 'Berlin' }, tags: ['a', 'b'] },
    items: [{ name: 'first' }, { name: 'second', price: 9.5 }],
    matrix: [
      [1, 2],
      [3, 4],
    ],
    'dash-key': 'dashed',
    greeting: 'say {env.API_KEY}',
  },
  tools: {
    Lookup: { status: 200, body: { id: 'c-1', lines: [{ sku: 'X' }] } },
    'fetch-order_2': { total: 12 },
    Empty: {},
  },
  env: { API_BASE: 'https://api.example.com', API_KEY: 'secret', UNSET: undefined },
  system: { sessionId: 's-1', date: '2025-06-01', nodeName: 'Ask' },
};

describe('renderText substitutes placeholders by the spec rules', () => {
  test.each([
    // memory, both spellings, each value type
    ['a string is inserted as is', 'Hi {memory.name}!', 'Hi Ada!'],
    ['state.memory is the same as memory', 'Hi {state.memory.name}!', 'Hi Ada!'],
    ['an empty string is inserted (it exists)', '[{memory.empty}]', '[]'],
    ['a number becomes its text', 'n={memory.count}', 'n=3'],
    ['0 becomes "0"', 'n={memory.zero}', 'n=0'],
    ['true becomes "true"', 'v={memory.yes}', 'v=true'],
    ['false becomes "false"', 'v={memory.no}', 'v=false'],
    ['an object becomes compact JSON', '{memory.user.profile}', '{"city":"Berlin"}'],
    ['an array becomes compact JSON', '{memory.user.tags}', '["a","b"]'],
    ['null becomes the text null', 'v={memory.nothing}', 'v=null'],
    ['an undefined value stays as written', 'v={memory.notSet}', 'v={memory.notSet}'],
    ['a missing key stays as written', 'v={memory.unknown}', 'v={memory.unknown}'],
    ['a nested path is walked', '{state.memory.user.profile.city}', 'Berlin'],
    ['an array index with a dot', '{memory.items.1.name}', 'second'],
    ['an array index with brackets', '{memory.items[1].name}', 'second'],
    ['two bracket indexes in a row', '{memory.matrix[1][0]}', '3'],
    ['an index past the end stays as written', '{memory.items[5].name}', '{memory.items[5].name}'],
    ['a deep missing path stays as written', '{memory.user.profile.zip.code}', '{memory.user.profile.zip.code}'],
    ['a path through null stays as written', '{memory.nothing.x}', '{memory.nothing.x}'],
    ['a path into a string stays as written', '{memory.name.length}', '{memory.name.length}'],
    ['a key with a dash', '{memory.dash-key}', 'dashed'],
    // tools
    ['a node output property', 'status {tools.Lookup.status}', 'status 200'],
    ['a nested node output', '{tools.Lookup.body.lines[0].sku}', 'X'],
    ['a node output object as JSON', '{tools.Lookup.body.lines}', '[{"sku":"X"}]'],
    ['a node name with a dash and underscore', '{tools.fetch-order_2.total}', '12'],
    ['a node that has not run stays as written', '{tools.Missing.status}', '{tools.Missing.status}'],
    ['a missing property of a node stays as written', '{tools.Empty.status}', '{tools.Empty.status}'],
    ['a node without a property is not a placeholder', '{tools.Lookup}', '{tools.Lookup}'],
    // env
    ['an environment variable', '{env.API_BASE}/v1', 'https://api.example.com/v1'],
    ['a variable that is not passed stays as written', '{env.HOME}', '{env.HOME}'],
    ['a variable passed as undefined stays as written', '{env.UNSET}', '{env.UNSET}'],
    ['a dotted env name is not a placeholder', '{env.API_BASE.x}', '{env.API_BASE.x}'],
    // system
    ['a system value', 'session {system.sessionId}', 'session s-1'],
    ['a missing system value stays as written', '{system.userId}', '{system.userId}'],
    // prototype pollution and inherited properties
    ['__proto__ never resolves', '{memory.__proto__}', '{memory.__proto__}'],
    ['constructor never resolves', '{memory.constructor}', '{memory.constructor}'],
    ['prototype never resolves', '{tools.Lookup.constructor.prototype}', '{tools.Lookup.constructor.prototype}'],
    ['an inherited method never resolves', '{memory.user.toString}', '{memory.user.toString}'],
    ['an inherited node name never resolves', '{tools.constructor.name}', '{tools.constructor.name}'],
    ['an inherited env name never resolves', '{env.__proto__}', '{env.__proto__}'],
    ['hasOwnProperty of env never resolves', '{env.hasOwnProperty}', '{env.hasOwnProperty}'],
    // several in one text, and text that only has braces
    [
      'several placeholders in one text',
      '{memory.name} in {memory.user.profile.city} ({memory.count}, {memory.missing})',
      'Ada in Berlin (3, {memory.missing})',
    ],
    ['the same placeholder twice', '{memory.name}/{memory.name}', 'Ada/Ada'],
    ['JSON in a prompt is left alone', 'Answer as { "a": 1 } or {"b":[2]}', 'Answer as { "a": 1 } or {"b":[2]}'],
    ['an unknown kind is left alone', '{foo.bar} {user.name} {state.name}', '{foo.bar} {user.name} {state.name}'],
    ['a kind without a path is left alone', '{memory} {memory.} {system}', '{memory} {memory.} {system}'],
    ['spaces inside the braces are not a placeholder', '{ memory.name }', '{ memory.name }'],
    ['a placeholder inside extra braces', '{{memory.name}}', '{Ada}'],
    ['a value is not scanned again', '{memory.greeting}', 'say {env.API_KEY}'],
    ['text without braces is unchanged', 'plain text', 'plain text'],
  ])('%s: %j', (_behaviour, template, expected) => {
    expect(renderText(template, scope)).toBe(expected);
  });

  test('a memory that is not an object leaves every memory placeholder as written', () => {
    expect(renderText('{memory.a}', { ...scope, memory: 'text' })).toBe('{memory.a}');
    expect(renderText('{memory.a}', { ...scope, memory: null })).toBe('{memory.a}');
  });

  test('a value JSON cannot serialize (a cycle) leaves the placeholder as written', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(renderText('{memory.c}', { ...scope, memory: { c: cyclic } })).toBe('{memory.c}');
  });

  test('own properties of a null-prototype object resolve', () => {
    const memory = Object.assign(Object.create(null), { a: 'x' });
    expect(renderText('{memory.a}', { ...scope, memory })).toBe('x');
  });
});

describe('renderValue renders tool parameters', () => {
  test.each([
    ['a number keeps its type', '{memory.count}', 3],
    ['0 keeps its type', '{memory.zero}', 0],
    ['false keeps its type', '{memory.no}', false],
    ['null keeps its type', '{state.memory.nothing}', null],
    ['an object keeps its type', '{memory.user.profile}', { city: 'Berlin' }],
    ['an array keeps its type', '{tools.Lookup.body.lines}', [{ sku: 'X' }]],
    ['a string stays a string', '{env.API_BASE}', 'https://api.example.com'],
    ['a missing value stays as written', '{memory.unknown}', '{memory.unknown}'],
    ['text around a placeholder gives text', 'n={memory.count}', 'n=3'],
    ['two placeholders give text', '{memory.count}{memory.count}', '33'],
    ['a space around the placeholder gives text', ' {memory.count}', ' 3'],
    ['a non-string is kept', 42, 42],
    ['a boolean is kept', true, true],
    ['null is kept', null, null],
  ])('%s: %j', (_behaviour, value, expected) => {
    expect(renderValue(value, scope)).toEqual(expected);
  });

  test('walks nested objects and arrays, rendering strings and keeping keys as written', () => {
    const parameters = {
      count: '{memory.count}',
      query: { city: '{memory.user.profile.city}', '{memory.name}': 'key is not rendered' },
      list: ['{memory.items[0].name}', 7, { deep: 'id {tools.Lookup.body.id}' }],
      missing: '{tools.Missing.x}',
    };
    expect(renderValue(parameters, scope)).toEqual({
      count: 3,
      query: { city: 'Berlin', '{memory.name}': 'key is not rendered' },
      list: ['first', 7, { deep: 'id c-1' }],
      missing: '{tools.Missing.x}',
    });
  });

  test('does not change the parameters it is given', () => {
    const parameters = { a: '{memory.count}', b: ['{memory.name}'] };
    renderValue(parameters, scope);
    expect(parameters).toEqual({ a: '{memory.count}', b: ['{memory.name}'] });
  });

  test('a __proto__ key in parameters stays an own key and does not become the prototype', () => {
    const parameters = JSON.parse('{"__proto__": {"polluted": "{memory.name}"}}');
    const rendered = renderValue(parameters, scope) as Record<string, unknown>;
    expect(Object.getPrototypeOf(rendered)).toBe(Object.prototype);
    expect(Object.hasOwn(rendered, '__proto__')).toBe(true);
    expect((rendered as { polluted?: unknown }).polluted).toBeUndefined();
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });

  test('keeps values that are not plain objects as they are', () => {
    const date = new Date('2025-06-01T00:00:00Z');
    expect(renderValue(date, scope)).toBe(date);
  });
});

describe('placeholdersIn lists the references of a text', () => {
  test.each([
    ['memory, state spelling', 'x {state.memory.user.name} y', [['memory', 'user.name', '{state.memory.user.name}']]],
    [
      'memory, bracket index as a segment',
      '{memory.items[0].name}',
      [['memory', 'items.0.name', '{memory.items[0].name}']],
    ],
    [
      'tools: the node name comes first',
      '{tools.Fetch-1.body.id}',
      [['tools', 'Fetch-1.body.id', '{tools.Fetch-1.body.id}']],
    ],
    ['env: the variable name', '{env.API_KEY}', [['env', 'API_KEY', '{env.API_KEY}']]],
    ['system', '{system.sessionId}', [['system', 'sessionId', '{system.sessionId}']]],
    ['not placeholders', '{foo.bar} { "a": 1 } {tools.X} {env.A.b}', []],
    [
      'several, in order, repeats included',
      '{env.A}{memory.b}{env.A}',
      [
        ['env', 'A', '{env.A}'],
        ['memory', 'b', '{memory.b}'],
        ['env', 'A', '{env.A}'],
      ],
    ],
  ])('%s: %j', (_behaviour, template, expected) => {
    expect(placeholdersIn(template).map(({ kind, path, raw }) => [kind, path, raw])).toEqual(expected);
  });

  test('names forbidden paths too, so validation sees every reference', () => {
    expect(placeholdersIn('{memory.__proto__.x}')).toEqual([
      { kind: 'memory', path: '__proto__.x', raw: '{memory.__proto__.x}' },
    ]);
  });
});
