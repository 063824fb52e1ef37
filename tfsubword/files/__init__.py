"""Vocabulary and model files: read, validated, written atomically. No TensorFlow graph code here."""
