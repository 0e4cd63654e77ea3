// A real OpenID provider on loopback for the single sign-on tests (node-oidc-provider).
//
// node provider.mjs PORT STATE_FILE CLIENT_ID CLIENT_SECRET REDIRECT_URI POST_LOGOUT_URI
//
// STATE_FILE is JSON read at every request, so a test changes it between logins:
//   {"accounts": {"alice": {"groups": ["team-a"]}},
//    "id_token": null | "signature" | "expired" | "audience" | "replay"}
// "id_token" spoils the next ID tokens the token endpoint hands out, as an attacker or a
// broken provider would: a flipped signature, an expired token or one for another audience
// (both signed with the provider's key), or the previous login's token replayed.
import { readFileSync } from 'node:fs';
import * as jose from 'jose';
import Provider from 'oidc-provider';

const [port, stateFile, clientId, clientSecret, redirectUri, postLogoutUri] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;
const readState = () => JSON.parse(readFileSync(stateFile, 'utf8'));

const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
const signingKey = { ...(await jose.exportJWK(privateKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
const scopes = ['openid', 'profile', 'email', 'groups'];

const provider = new Provider(issuer, {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    redirect_uris: [redirectUri],
    post_logout_redirect_uris: [postLogoutUri],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  jwks: { keys: [signingKey] },
  scopes,
  claims: {
    openid: ['sub'],
    profile: ['preferred_username', 'given_name', 'family_name'],
    email: ['email'],
    groups: ['groups'],
  },
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, id) {
    const account = readState().accounts[id];
    if (!account) return undefined;
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          preferred_username: account.preferred_username ?? id,
          email: `${id}@example.com`,
          groups: account.groups,
        };
      },
    };
  },
  // The dashboard is a first-party client: no consent screen.
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId
      || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope(scopes.join(' '));
    await grant.save();
    return grant;
  },
});

async function resign(idToken, change) {
  const payload = { ...jose.decodeJwt(idToken), ...change };
  return new jose.SignJWT(payload)
    .setProtectedHeader({ alg: 'RS256', kid: signingKey.kid })
    .sign(privateKey);
}

let previousIdToken = null;
async function spoil(idToken, how) {
  const now = Math.floor(Date.now() / 1000);
  if (how === 'signature') {
    const [header, payload, signature] = idToken.split('.');
    const flipped = (signature[10] === 'A' ? 'B' : 'A');
    return [header, payload, signature.slice(0, 10) + flipped + signature.slice(11)].join('.');
  }
  if (how === 'expired') return resign(idToken, { iat: now - 7200, exp: now - 3600 });
  if (how === 'audience') return resign(idToken, { aud: 'another-application' });
  if (how === 'replay') return previousIdToken ?? idToken;
  return idToken;
}

provider.use(async (ctx, next) => {
  await next();
  if (ctx.path === '/token' && ctx.status === 200 && ctx.body?.id_token) {
    const issued = ctx.body.id_token;
    ctx.body = { ...ctx.body, id_token: await spoil(issued, readState().id_token) };
    previousIdToken = issued;
  }
});

provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`listening ${issuer}`);
});
