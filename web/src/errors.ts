/**
 * What the console says when the API refuses: a sentence for the situation (by status and code), the service's own
 * message, and each detail as "Field name: what is wrong", the field named as a person reads it. The code and
 * status stay, small, for a support request.
 */

/** A sentence for each kind of refusal; the service's message follows it. */
export function refusalTitle(status: number, code: string): string {
  if (code === 'VALIDATION_ERROR') return 'Some of what was entered is not accepted.';
  if (code === 'RATE_LIMITED' || status === 429)
    return 'Too many requests just now. Wait a few seconds, then try again.';
  if (code === 'SERVICE_BUSY' || status === 503) return 'The service is busy. Try again in a moment.';
  if (status === 401) return 'You are signed out. Sign in again.';
  if (status === 403) return 'You may not do this.';
  if (status === 404) return 'It is not there (any more).';
  if (status === 409) return 'This cannot be done right now.';
  if (status === 413) return 'That is too large.';
  if (status >= 500) return 'The service could not do this. Try again in a moment.';
  return 'The request was refused.';
}

/** `displayName` → "Display name", `knowledgeBases.0.minScore` → "Knowledge bases 1, min score"; '' → "The request". */
export function fieldLabel(field: string): string {
  if (field === '') return 'The request';
  const words = field
    .split('.')
    .map((part) => (/^\d+$/.test(part) ? String(Number(part) + 1) : part.replace(/([a-z0-9])([A-Z])/g, '$1 $2')))
    .join(', ')
    .toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** The detail's message without the field it starts with (the label says it), ending with a full stop. */
export function detailText(field: string, message: string): string {
  const name = field.split('.').at(-1) ?? field;
  let text = message;
  for (const prefix of [`${field} `, `${field}: `, `${name} `, `${name}: `]) {
    if (field !== '' && text.startsWith(prefix)) {
      text = text.slice(prefix.length);
      break;
    }
  }
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

/** An error that is no refusal of the API: the network's in words, otherwise its own message (never its class). */
export function otherErrorText(error: unknown): string {
  if (error instanceof TypeError && /fetch|network/i.test(error.message)) {
    return 'The service could not be reached. Check the connection, then try again.';
  }
  const message = error instanceof Error ? error.message : String(error);
  return message === '' ? 'Something went wrong.' : message;
}
