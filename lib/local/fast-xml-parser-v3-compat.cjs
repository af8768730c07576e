'use strict';
/**
 * fast-xml-parser 3's API as s3rver 3.7.1 calls it (lib/s3rver.js, controllers/object.js, models/error.js,
 * models/config.js, utils.js), on fast-xml-parser 4.x. Version 3 is unmaintained and has known prototype-pollution
 * and entity-expansion flaws that were fixed in 4.x only; s3rver is not maintained either, so package.json's `overrides`
 * pin s3rver's `fast-xml-parser` to 4.5.7 and lib/local/s3rver.ts answers s3rver's `require('fast-xml-parser')`
 * with this module.
 *
 * Only the options s3rver passes (and the ones whose v3 defaults shape its output) are translated; any other option
 * throws, so a future caller cannot silently get v4 semantics under a v3 name.
 */
// By its file, not its name: jest maps the name `fast-xml-parser` to this module (jest.config.js).
const { XMLBuilder, XMLParser, XMLValidator } = require('fast-xml-parser/src/fxp');
const toNumber = require('strnum');

const PARSE_OPTIONS = new Set([
  'attributeNamePrefix',
  'textNodeName',
  'ignoreAttributes',
  'allowBooleanAttributes',
  'parseNodeValue',
  'parseAttributeValue',
  'trimValues',
  'tagValueProcessor',
  'attrValueProcessor',
]);

const BUILD_OPTIONS = new Set([
  'attributeNamePrefix',
  'attrNodeName',
  'textNodeName',
  'ignoreAttributes',
  'format',
  'indentBy',
  'supressEmptyNode',
  'tagValueProcessor',
  'attrValueProcessor',
]);

function checkOptions(options, known, what) {
  for (const name of Object.keys(options)) {
    if (!known.has(name)) throw new TypeError(`fast-xml-parser-v3-compat: ${what} option ${name} is not supported`);
  }
}

const identity = (value) => value;

/** v3's parseValue: after the tag value processor, "true"/"false" become booleans and numbers numbers. */
function parseValueV3(value) {
  if (typeof value !== 'string') return value;
  const trimmed = value.trim();
  if (trimmed === 'true') return true;
  if (trimmed === 'false') return false;
  return toNumber(value, { hex: true, leadingZeros: true });
}

/** v3 `parse(xml, options)`: the same object for the options s3rver uses. */
function parse(xml, options = {}) {
  checkOptions(options, PARSE_OPTIONS, 'parse');
  const tagValueProcessor = options.tagValueProcessor || identity;
  const attrValueProcessor = options.attrValueProcessor || identity;
  const parseNodeValue = options.parseNodeValue !== false;
  const parser = new XMLParser({
    attributeNamePrefix: options.attributeNamePrefix === undefined ? '@_' : options.attributeNamePrefix,
    textNodeName: options.textNodeName || '#text',
    ignoreAttributes: options.ignoreAttributes !== false,
    allowBooleanAttributes: options.allowBooleanAttributes === true,
    parseAttributeValue: options.parseAttributeValue === true,
    trimValues: options.trimValues !== false,
    // v3 left the XML declaration and processing instructions out of the object.
    ignoreDeclaration: true,
    ignorePiTags: true,
    // v3 decoded no entities itself (s3rver passes he.decode as the processor) and parsed numbers after the
    // processor ran; v4 does both the other way round, so both are switched off here and done in the processor.
    processEntities: false,
    parseTagValue: false,
    tagValueProcessor: (tagName, value) => {
      const processed = tagValueProcessor(value, tagName);
      return parseNodeValue ? parseValueV3(processed) : processed;
    },
    attributeValueProcessor: (name, value) => attrValueProcessor(value, name),
  });
  return parser.parse(xml);
}

/** v3 `validate(xml, options)`: true, or an object describing the first error. */
function validate(xml, options) {
  return XMLValidator.validate(xml, options);
}

/** v3 `new j2xParser(options).parse(object)`: XML text from an object. */
class j2xParser {
  constructor(options = {}) {
    checkOptions(options, BUILD_OPTIONS, 'j2xParser');
    const tagValueProcessor = options.tagValueProcessor || identity;
    const attrValueProcessor = options.attrValueProcessor || identity;
    this.builder = new XMLBuilder({
      attributeNamePrefix: options.attributeNamePrefix === undefined ? '@_' : options.attributeNamePrefix,
      attributesGroupName: options.attrNodeName || false,
      textNodeName: options.textNodeName || '#text',
      ignoreAttributes: options.ignoreAttributes !== false,
      format: options.format === true,
      indentBy: options.indentBy === undefined ? '  ' : options.indentBy,
      suppressEmptyNode: options.supressEmptyNode === true,
      // v3 wrote values as its processors returned them (s3rver escapes with he); v4 would escape a second time,
      // and would write an attribute whose value is "true" without its value.
      processEntities: false,
      suppressBooleanAttributes: false,
      tagValueProcessor: (name, value) => tagValueProcessor(value, name),
      attributeValueProcessor: (name, value) => attrValueProcessor(value, name),
    });
  }

  parse(object) {
    return this.builder.build(object);
  }
}

/**
 * v3 `getTraversalObj(xml)`, reduced to what s3rver's getXmlRootTag reads: `child` maps each top-level element name
 * to a list whose first node has that `tagname`.
 */
function getTraversalObj(xml) {
  const nodes = new XMLParser({ preserveOrder: true, ignoreAttributes: true, processEntities: false }).parse(xml);
  const child = {};
  for (const node of nodes) {
    for (const tagname of Object.keys(node)) {
      if (tagname.startsWith('?') || tagname.startsWith('#') || tagname === ':@') continue;
      child[tagname] = child[tagname] || [];
      child[tagname].push({ tagname });
    }
  }
  return { tagname: '!xml', child };
}

module.exports = { parse, validate, j2xParser, getTraversalObj };
