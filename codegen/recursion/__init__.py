"""Recursion: recursive cycles found, lowered to blocks, and run as a static Call/Return machine.

`cycles` finds a cycle and compiles its blocks, `frame_specs` types its frame
variables, `frames` lays out the frame tables and names the loop state,
`machine` builds the `tf.while_loop` that runs every ready frame of a block at
once and moves the frames on by the block's terminator.
"""
