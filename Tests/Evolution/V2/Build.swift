// Build 2 of the app: the Visit form at version 2, compiled by the plugin from Visit.yaml.
// (A target needs one Swift file of its own; everything else here is generated.)
