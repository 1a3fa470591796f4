"""Test package: the prefix config-setting declared by the project."""
