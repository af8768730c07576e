/** Small builders for DynamoDB expressions, so stores state what they write rather than how it is spelled. */

export interface UpdateParts {
  UpdateExpression: string;
  ExpressionAttributeNames: Record<string, string>;
  ExpressionAttributeValues: Record<string, unknown>;
}

/** `SET #a = :a, #b = :b` for every entry (values may be null, stored as NULL), then `REMOVE` the names in `remove`. */
export function setExpression(
  fields: Record<string, unknown>,
  extraValues: Record<string, unknown> = {},
  remove: readonly string[] = [],
): UpdateParts {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ...extraValues };
  const assignments = Object.entries(fields).map(([name, value], index) => {
    names[`#f${index}`] = name;
    values[`:f${index}`] = value;
    return `#f${index} = :f${index}`;
  });
  const removals = remove.map((name, index) => {
    names[`#r${index}`] = name;
    return `#r${index}`;
  });
  return {
    UpdateExpression: `SET ${assignments.join(', ')}${removals.length ? ` REMOVE ${removals.join(', ')}` : ''}`,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

export function isConditionFailure(error: unknown): boolean {
  return error instanceof Error && error.name === 'ConditionalCheckFailedException';
}

/** Runs a conditional write; answers undefined instead of throwing when the condition does not hold. */
export async function unlessConditionFails<T>(write: () => Promise<T>): Promise<T | undefined> {
  try {
    return await write();
  } catch (error) {
    if (isConditionFailure(error)) return undefined;
    throw error;
  }
}
