// cognito-local's own start script, in a process that ends when its parent does: the parent holds this process's
// stdin open, so a parent that dies (even by SIGKILL) closes it and this process exits instead of keeping the port.
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
// Everything it writes (the people, their passwords, its config) is this user's alone.
process.umask(0o077);

// What cognito-local 5.3.0 gets wrong, fixed before it starts (its router reads `Targets` at each request). The guard
// in front of it (cognito-guard.ts) lets anyone call InitiateAuth, RespondToAuthChallenge and ForgotPassword, so:
// - RespondToAuthChallenge checks neither the Session nor the person's state: anyone could set anyone's password by
//   naming them. A challenge is answered only with a Session this process handed out for that person, challenge and
//   app client, within AUTH_SESSION_MS, once; NEW_PASSWORD_REQUIRED only for a person who must choose a password.
// - InitiateAuth hands the NEW_PASSWORD_REQUIRED challenge of an invited person without comparing the temporary
//   password: it is compared first.
// - AdminCreateUser has no MessageAction RESEND (an invited person who never signed in gets a new temporary password):
//   done here as Cognito does it.
// - ForgotPassword's code comes from Math.random (or CODE, which the parent does not pass): from crypto here; and the
//   code is handed to the parent (IPC), which prints it as the invitation's password is printed.
const { createHash, randomInt, timingSafeEqual } = require('node:crypto');
const { Targets } = require('cognito-local/lib/targets/targets');
const {
  CognitoError,
  InvalidPasswordError,
  NotAuthorizedError,
  UserNotFoundError,
} = require('cognito-local/lib/errors');

/** Cognito's default life of a challenge's session: 3 minutes. */
const AUTH_SESSION_MS = 3 * 60 * 1000;
const MAX_SESSIONS = 10_000;
/** Session → { username, challenge, clientId, expires } */
const sessions = new Map();

const sameSecret = (a, b) =>
  typeof a === 'string' &&
  typeof b === 'string' &&
  timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());

function remember(answer, clientId) {
  if (answer && typeof answer.Session === 'string' && answer.ChallengeName) {
    const now = Date.now();
    for (const [id, session] of sessions) if (session.expires < now) sessions.delete(id);
    if (sessions.size >= MAX_SESSIONS) sessions.delete(sessions.keys().next().value);
    sessions.set(answer.Session, {
      username: answer.ChallengeParameters?.USER_ID_FOR_SRP,
      challenge: answer.ChallengeName,
      clientId,
      expires: now + AUTH_SESSION_MS,
    });
  }
  return answer;
}

const userOf = async (services, ctx, clientId, username) => {
  if (typeof username !== 'string') return null;
  const pool = await services.cognito.getUserPoolForClientId(ctx, clientId);
  return pool.getUserByUsername(ctx, username);
};

const initiateAuth = Targets.InitiateAuth;
Targets.InitiateAuth = (services) => {
  const target = initiateAuth(services);
  return async (ctx, req) => {
    if (req?.AuthFlow === 'USER_PASSWORD_AUTH' && req.AuthParameters) {
      const user = await userOf(services, ctx, req.ClientId, req.AuthParameters.USERNAME);
      if (user?.UserStatus === 'FORCE_CHANGE_PASSWORD' && !sameSecret(user.Password, req.AuthParameters.PASSWORD)) {
        throw new InvalidPasswordError();
      }
    }
    return remember(await target(ctx, req), req?.ClientId);
  };
};

const respondToAuthChallenge = Targets.RespondToAuthChallenge;
Targets.RespondToAuthChallenge = (services) => {
  const target = respondToAuthChallenge(services);
  return async (ctx, req) => {
    const refused = () => new NotAuthorizedError('Invalid session for the user.');
    const session = typeof req?.Session === 'string' ? sessions.get(req.Session) : undefined;
    if (
      !session ||
      session.expires < Date.now() ||
      session.challenge !== req.ChallengeName ||
      session.clientId !== req.ClientId
    ) {
      throw refused();
    }
    const user = await userOf(services, ctx, req.ClientId, req.ChallengeResponses?.USERNAME);
    if (!user || user.Username !== session.username) throw refused();
    if (req.ChallengeName === 'NEW_PASSWORD_REQUIRED' && user.UserStatus !== 'FORCE_CHANGE_PASSWORD') throw refused();
    const answer = await target(ctx, req);
    sessions.delete(req.Session);
    return remember(answer, req.ClientId);
  };
};

const forgotPassword = Targets.ForgotPassword;
Targets.ForgotPassword = (services) => {
  const target = forgotPassword({ ...services, otp: () => String(randomInt(0, 1_000_000)).padStart(6, '0') });
  return async (ctx, req) => {
    const answer = await target(ctx, req);
    const user = await userOf(services, ctx, req.ClientId, req.Username);
    const email = answer?.CodeDeliveryDetails?.Destination;
    if (process.send && user?.ConfirmationCode && typeof email === 'string') {
      try {
        process.send({ kind: 'password-reset-code', email, code: user.ConfirmationCode });
      } catch {
        // the parent is gone: this process ends with its stdin
      }
    }
    return answer;
  };
};

// AdminCreateUser with MessageAction RESEND (cognito-local has none), as Cognito answers it: a person who never signed in
// gets a new temporary password, "sent" as the first was (DesiredDeliveryMediums); anyone else UnsupportedUserState.
const adminCreateUser = Targets.AdminCreateUser;
Targets.AdminCreateUser = (services) => {
  const target = adminCreateUser(services);
  return async (ctx, req) => {
    if (req?.MessageAction !== 'RESEND') return target(ctx, req);
    const pool = await services.cognito.getUserPool(ctx, req.UserPoolId);
    const user = await pool.getUserByUsername(ctx, req.Username);
    if (!user) throw new UserNotFoundError('User does not exist.');
    if (user.UserStatus !== 'FORCE_CHANGE_PASSWORD') {
      throw new CognitoError(
        'UnsupportedUserStateException',
        `Resend not possible. ${req.Username} status is not FORCE_CHANGE_PASSWORD.`,
      );
    }
    const temporaryPassword = `Tmp-${randomInt(0, 1e9)}-${randomInt(0, 1e9)}-Aa`;
    const updated = { ...user, Password: temporaryPassword, UserLastModifiedDate: services.clock.get() };
    await pool.saveUser(ctx, updated);
    const email = user.Attributes?.find((a) => a.Name === 'email')?.Value;
    await services.messages.deliver(
      ctx,
      'AdminCreateUser',
      null,
      req.UserPoolId,
      updated,
      temporaryPassword,
      req.ClientMetadata,
      {
        AttributeName: 'email',
        DeliveryMedium: 'EMAIL',
        Destination: email,
      },
    );
    return {
      User: {
        Username: user.Username,
        UserStatus: user.UserStatus,
        Enabled: user.Enabled,
        Attributes: user.Attributes,
      },
    };
  };
};

require('cognito-local/lib/bin/start.js');
