"""Recursion: recursive cycles found, lowered to blocks, and run as a static Call/Return machine.

`cycles` finds a cycle and compiles its blocks, `frame_specs` types its frame
variables, `machine` builds the `tf.while_loop` that runs every ready frame of
a block at once.
"""
