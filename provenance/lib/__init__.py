"""Plain helpers the apps share (document extraction, archives, the heatmap's encoding)."""
