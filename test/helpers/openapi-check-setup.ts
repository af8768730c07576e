/** jest globalSetup: test/helpers/openapi-check-global.ts. */
import { setup } from './openapi-check-global';

export default setup;
