package control

import "runtime/debug"

// releaseMemory hands back to the OS the memory a load freed: opening the
// databases builds tables several times the size of what it keeps, and
// the runtime would return those pages only slowly, so the process would
// keep them resident for minutes. Called where a load completes, never on
// the query path: it costs a collection.
var releaseMemory = debug.FreeOSMemory
