"""Where the candidates of a completion come from: the model's own draft, copies of lines, known names."""
