"""Kernel bundles in: validation, storage, the upload form, the token API and the submission pages."""
