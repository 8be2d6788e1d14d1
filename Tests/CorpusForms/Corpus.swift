// The corpus of the interpreter differential test, compiled by the plugin from its specs.
// (A target needs one Swift file of its own; everything else here is generated.)
