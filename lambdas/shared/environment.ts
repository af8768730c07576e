/**
 * Where the handlers' configuration comes from. In Lambda: the process environment the stack gives each function.
 * Locally, the runtime runs every handler in one process and hands them the engines' endpoints, credentials and
 * resource names with `configureHandlerEnvironment` instead of writing them into `process.env`: the process's own
 * environment stays what the user started it with, and what the handlers were given is in one place.
 */

export type EnvironmentValues = Readonly<Record<string, string | undefined>>;

let given: EnvironmentValues = {};

/** Replaces what the local runtime gave the handlers (each start gives the whole set again). */
export function configureHandlerEnvironment(values: EnvironmentValues): void {
  given = { ...values };
}

/** The handlers' environment: what the runtime gave them over the process environment. Read at cold start. */
export function handlerEnvironment(): EnvironmentValues {
  return { ...process.env, ...given };
}

/** One variable of the handlers' environment. */
export function handlerVariable(name: string): string | undefined {
  return name in given ? given[name] : process.env[name];
}
