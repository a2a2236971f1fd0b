"""Renderers, one per format; each takes a CudaTimeResult and knows nothing of IPython."""
