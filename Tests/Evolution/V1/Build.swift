// Build 1 of the app: the Visit form at version 1, compiled by the plugin from Visit.yaml.
// (A target needs one Swift file of its own; everything else here is generated.)
