/**
 * Schedule triggers in AWS: one EventBridge Scheduler schedule invokes the tick function every minute; the tick
 * evaluates each stored schedule trigger's cron in its own time zone (lambdas/core/flows/scheduler.ts), exactly as
 * the local runtime's timer does, so a cron means the same thing in both places, and sends each due fire to the flow
 * runner's queue (lib/constructs/flow-runner.ts), which runs it. Grants follow WORKERS.scheduleTick in lib/routes.ts.
 */
import { type CfnElement, Duration, Stack, Validations } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Schedule, ScheduleExpression } from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import { Construct } from 'constructs';
import { WORKERS } from '../routes';
import { grantAccess, type PlatformResources, resourceEnvironment } from './resource-access';
import { ServiceFunction } from './service-function';

export interface FlowSchedulerProps {
  readonly resources: PlatformResources;
}

export class FlowScheduler extends Construct {
  public readonly tick: ServiceFunction;
  public readonly schedule: Schedule;

  constructor(scope: Construct, id: string, props: FlowSchedulerProps) {
    super(scope, id);
    const access = WORKERS.scheduleTick.access;
    this.tick = new ServiceFunction(this, 'ScheduleTickFunction', {
      handlerFile: WORKERS.scheduleTick.handler,
      description: "Sends the due fires of agent definitions' schedule triggers to the flow runner's queue",
      timeout: Duration.seconds(55),
      environment: resourceEnvironment(props.resources, access),
    });
    grantAccess(this.tick, props.resources, access);
    const role = new Role(this, 'SchedulerRole', {
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com'),
      description: 'EventBridge Scheduler invokes the schedule tick function',
    });
    const tickArn = `<${Stack.of(this).getLogicalId(this.tick.node.defaultChild as CfnElement)}.Arn>`;
    Validations.of(role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${tickArn}:*]`,
      reason:
        'grantInvoke on the tick function adds <function ARN>:* so its versions and aliases can be invoked; the ' +
        'role can invoke this one function only.',
    });
    this.schedule = new Schedule(this, 'EveryMinute', {
      schedule: ScheduleExpression.rate(Duration.minutes(1)),
      // A missed minute is caught up by the next tick (it looks back 15 minutes), so no retries pile up.
      target: new LambdaInvoke(this.tick, { retryAttempts: 0, role }),
      description: 'Tick of the flow scheduler (schedule triggers)',
    });
  }
}
