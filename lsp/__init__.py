"""diffill.lsp"""
