package atomicfile

// LinkRemove exposes the link(2) fallback of RenameNoReplace.
var LinkRemove = linkRemove
