import sys

from data_gen.cli import main

sys.exit(main())
