"""An offline edit of a stopped standalone worker's offsets file: `kind`, its steps."""
