"""Static and dynamic evaluation of tool-calling models (DiaFORGE Appendix C)."""
