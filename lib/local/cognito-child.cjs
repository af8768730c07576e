// cognito-local's own start script, in a process that ends when its parent does: the parent holds this process's
// stdin open, so a parent that dies (even by SIGKILL) closes it and this process exits instead of keeping the port.
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
require('cognito-local/lib/bin/start.js');
