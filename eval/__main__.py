import sys

from eval.cli import main

sys.exit(main())
