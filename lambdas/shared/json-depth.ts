/** How deep a JSON request body may nest (lambdas/shared/http.ts refuses a deeper one with 400 `maxDepth`). */

/**
 * Deepest nesting of objects and arrays a JSON body may have. JSON.parse reads any depth, but JSON.stringify, zod and
 * every recursive walk of a value overflow the stack somewhere past a few thousand levels (a 500); no request of
 * this API needs more than a handful, and a webhook payload stays far below this too.
 */
export const MAX_JSON_DEPTH = 64;

/** Whether valid JSON text nests objects and arrays deeper than `limit`: one pass over the text, no recursion. */
export function nestingDepthOver(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (inString) {
      // A backslash escapes the next character; a quote ends the string.
      if (char === 0x5c) i++;
      else if (char === 0x22) inString = false;
    } else if (char === 0x22) inString = true;
    else if (char === 0x7b || char === 0x5b) {
      depth++;
      if (depth > limit) return true;
    } else if (char === 0x7d || char === 0x5d) depth--;
  }
  return false;
}
