"""What users install and where: the wheel, uvx, the bundle, the Docker image, the CI workflow.

And the suite itself as Windows and macOS would collect it.
"""
