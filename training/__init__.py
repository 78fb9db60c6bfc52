"""diffill.training: the code corpus, training examples, the training loop, export and the corpus memory's
building. On top of the inference packages (it imports diffill.model and diffill.infill, nothing imports it)."""
