/** jest globalTeardown: test/helpers/openapi-check-global.ts. */
import { teardown } from './openapi-check-global';

export default teardown;
