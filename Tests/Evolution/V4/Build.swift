// Build 4 of the app: the Visit form at version 4, compiled by the plugin from Visit.yaml.
// (A target needs one Swift file of its own; everything else here is generated.)
