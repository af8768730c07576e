/**
 * Where a definition's agent code runs (docs/agent-code.md): exactly one of an HTTPS `url` and a Lambda `functionArn`,
 * and a function only one the deployment registered (AGENT_CODE_FUNCTIONS, `-c agentCodeFunctions`), refused when the
 * definition is stored rather than when it runs.
 */
import { agentCodeFunctionsFromEnv } from '#composition/model-catalog';
import { checkDefinition } from '#core/flows/definitions';
import { helloFlow } from '../../../helpers/flow-definitions';

const ARN = 'arn:aws:lambda:eu-west-1:111122223333:function:desk-agent';
const withCode = (agentCode: Record<string, unknown>) => ({ ...helloFlow(), agentCode });
const problemsOf = (agentCode: Record<string, unknown>, registered?: string[]) =>
  checkDefinition(withCode(agentCode), undefined, undefined, registered).problems.map(({ field, rule }) => ({
    field,
    rule,
  }));

test('exactly one target: a url or a functionArn, not both, not neither', () => {
  expect(problemsOf({ url: 'https://desk.example.com/agent' })).toEqual([]);
  expect(problemsOf({ functionArn: ARN })).toEqual([]);
  expect(problemsOf({ functionArn: `${ARN}:live` })).toEqual([]);
  expect(problemsOf({ url: 'https://desk.example.com/agent', functionArn: ARN })).toEqual([
    { field: 'agentCode.url', rule: 'agentCode.oneTarget' },
  ]);
  expect(problemsOf({ timeoutSeconds: 3 })).toEqual([{ field: 'agentCode.url', rule: 'agentCode.oneTarget' }]);
});

test('a functionArn is a Lambda function ARN, and nothing longer than one', () => {
  for (const wrong of [
    'arn:aws:lambda:eu-west-1:111122223333:layer:desk',
    'arn:aws:lambda:eu-west-1:1111:function:desk',
    'arn:aws:s3:::bucket',
    `arn:aws:lambda:eu-west-1:111122223333:function:${'a'.repeat(65)}`,
    `arn:aws:lambda:${'-a'.repeat(20_000)}`,
  ]) {
    const [problem] = problemsOf({ functionArn: wrong });
    expect([wrong.slice(0, 60), problem?.field]).toEqual([wrong.slice(0, 60), 'agentCode.functionArn']);
  }
});

test('a function the deployment did not register is refused, with the ones it did; unknown lists are not checked', () => {
  const other = 'arn:aws:lambda:eu-west-1:111122223333:function:someone-else';
  expect(problemsOf({ functionArn: ARN }, [ARN])).toEqual([]);
  expect(checkDefinition(withCode({ functionArn: other }), undefined, undefined, [ARN]).problems).toEqual([
    {
      field: 'agentCode.functionArn',
      rule: 'agentCode.functionNotRegistered',
      message: `${other} is not one of the functions this deployment may invoke: ${ARN}`,
    },
  ]);
  expect(problemsOf({ functionArn: ARN }, [])).toEqual([
    { field: 'agentCode.functionArn', rule: 'agentCode.functionNotRegistered' },
  ]);
  // An HTTPS target needs no registration; a local run (no list) checks nothing.
  expect(problemsOf({ url: 'https://desk.example.com/agent' }, [])).toEqual([]);
  expect(problemsOf({ functionArn: other })).toEqual([]);
});

test('AGENT_CODE_FUNCTIONS is read as the stack writes it: comma-separated, empty for none, unset for unknown', () => {
  expect(agentCodeFunctionsFromEnv({ AGENT_CODE_FUNCTIONS: `${ARN}, ${ARN}:live` })).toEqual([ARN, `${ARN}:live`]);
  expect(agentCodeFunctionsFromEnv({ AGENT_CODE_FUNCTIONS: '' })).toEqual([]);
  expect(agentCodeFunctionsFromEnv({})).toBeUndefined();
});
